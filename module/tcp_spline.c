// SPDX-License-Identifier: GPL-2.0
/* Spline congestion control: a model-based TCP congestion control for lossy,
 * jittery paths (busy Wi-Fi), after the design of Bekzhan Kalimollayev.
 *
 * Like BBR, Spline estimates the bottleneck bandwidth (bw: a windowed max of
 * delivery-rate samples) and the round-trip propagation time (min_rtt: a
 * 10-second windowed min) and paces at a gain times bw. Unlike BBR it also
 * scores how *stable* the path looks ACK by ACK, and that score, not loss by
 * itself, decides whether it probes for more bandwidth or drains:
 *
 *   queue      : the last round's smallest RTT sample minus min_rtt (jitter
 *                spreads a round's samples, only a standing queue lifts
 *                their minimum)
 *   stable ACK : queue within the band (min_rtt / 4, at least 4 ms), not
 *                rising from the round before, delivery steady
 *   unfair ACK : queue out of band, and rising or delivery stalling
 *   losses count (tf, loss_cnt) only while the queue is out of band:
 *                random loss costs the lost packets and nothing more
 *   tf         = (0.75 x stable) / (1.5 x (recent_losses + unfair))
 *
 * The model, each ACK (all in integer fixed point, see spline_core.h):
 *
 *   bw_bytes_per_sec = max over 5-10 rounds of delivered * mss / interval
 *   rtt_m_us         = min_rtt + min((srtt - min_rtt) / 2, 32 ms, min_rtt)
 *   cwnd_pkts        = max(1.0 x bw x min_rtt,
 *                          1.25 x bw x rtt_m x fairness x backoff
 *                               / (1 - random loss, when 8-25%)
 *                               + acked [+ 4 in PROBE_BW and PROBE_RTT])
 *   pacing_bytes/s   = pacing_gain(mode) x bw x 0.99
 *
 * The mode is chosen at the end of each epoch; the first epoch is 20
 * rounds, later ones last a random 1..31 rounds so that competing Spline
 * flows do not probe in lock step:
 *
 *   START_PROBE --20 rounds--> PROBE_BW  <--tf >= 1, unfair <= stable-->
 *                                 |                       PROBE_RTT
 *                                 |  unfair > stable          |
 *                                 v  and losses high          v
 *                             DRAIN_PROBE --queue drained--> PROBE_RTT
 *
 *   mode         pacing gain   window
 *   START_PROBE  1.0 (window)  +1 packet per ACK, at most 2 x BDP
 *   PROBE_BW     2.15 (1.25    1.25 x bw x rtt_m (x fairness when lossy) + 4
 *                from a BDP
 *                in flight)
 *   PROBE_RTT    0.98          same model
 *   DRAIN_PROBE  0.39          0.34 x the model (on min_rtt: never below BDP)
 *
 * Loss alone does not halve the window: ssthresh() keeps the current
 * ssthresh, and cong_control() owns snd_cwnd during recovery. Losses raise
 * loss_cnt only in rounds that lose more than 10%; past 9 the window backs
 * off smoothly (x ls^3 / 2^ls, ls = min(loss_cnt, 12)).
 *
 * The algorithm lives in spline_core.h, shared byte for byte with the eBPF
 * struct_ops build (spline.bpf.c) and the userspace checker (check/). This
 * file only moves numbers between the socket and the core.
 */
#include <linux/module.h>
#include <linux/random.h>
#include <linux/version.h>
#include <linux/math64.h>
#include <net/tcp.h>
#include <linux/inet_diag.h>

#define SPL_DIV_U64(n, d) div64_u64((n), (d))
#include "spline_core.h"

/* Below this pacing rate (bytes/s, 1.2 Mbit/s) one segment per TSO burst
 * keeps the pacing smooth; above it two.
 */
#define SPLINE_MIN_TSO_RATE_BYTES_PER_SEC 150000UL

static struct spline_state *spline_state(struct sock *sk)
{
	return inet_csk_ca(sk);
}

static void spline_init(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	spline_init_state(spline_state(sk), tcp_snd_cwnd(tp), get_random_u32());
	cmpxchg(&sk->sk_pacing_status, SK_PACING_NONE, SK_PACING_NEEDED);
}

/* Fill the core's ACK snapshot from the socket and the rate sample. */
static void spline_fill_ack(struct sock *sk, const struct rate_sample *rs, struct spline_ack *a)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	a->now_us = tp->tcp_mstamp;
	a->max_pacing_rate_bytes_per_sec = READ_ONCE(sk->sk_max_pacing_rate);
	a->rs_interval_us = rs->interval_us;
	a->rs_rtt_us = rs->rtt_us;
	a->rs_delivered_pkts = rs->delivered;
	a->rs_losses_pkts = rs->losses;
	a->rs_prior_delivered_pkts = rs->prior_delivered;
	a->delivered_total_pkts = tp->delivered;
	a->lost_total_pkts = tp->lost;
	a->acked_sacked_pkts = rs->acked_sacked;
	a->prior_in_flight_pkts = rs->prior_in_flight;
	a->in_flight_pkts = tcp_packets_in_flight(tp);
	a->mss_bytes = tp->mss_cache;
	a->srtt_us = tp->srtt_us >> 3;
	a->cwnd_pkts = tcp_snd_cwnd(tp);
	a->cwnd_clamp_pkts = tp->snd_cwnd_clamp;
	a->reord_seen_total = tp->reord_seen;
	a->app_limited = rs->is_app_limited;
}

static void spline_apply(struct sock *sk, const struct rate_sample *rs)
{
	struct spline_ack a;
	struct spline_out out;

	spline_fill_ack(sk, rs, &a);
	spline_on_ack(spline_state(sk), &a, &out);
	tcp_snd_cwnd_set(tcp_sk(sk), out.cwnd_pkts);
	if (out.pacing_valid)
		WRITE_ONCE(sk->sk_pacing_rate, out.pacing_rate_bytes_per_sec);
}

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
static void spline_cong_control(struct sock *sk, u32 ack, int flag, const struct rate_sample *rs)
{
	spline_apply(sk, rs);
}
#else
static void spline_cong_control(struct sock *sk, const struct rate_sample *rs)
{
	spline_apply(sk, rs);
}
#endif

/* Entering recovery: remember the window, keep ssthresh (loss alone does
 * not halve the window; cong_control sets snd_cwnd).
 */
static u32 spline_ssthresh(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	spline_save_cwnd(spline_state(sk), tcp_snd_cwnd(tp));
	return tp->snd_ssthresh;
}

static u32 spline_undo_cwnd(struct sock *sk)
{
	return spline_undo_cwnd_pkts(spline_state(sk), tcp_snd_cwnd(tcp_sk(sk)));
}

static void spline_set_state(struct sock *sk, u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		spline_on_rto(spline_state(sk), tcp_snd_cwnd(tcp_sk(sk)));
}

static void spline_cwnd_event(struct sock *sk, enum tcp_ca_event event)
{
	if (event == CA_EVENT_TX_START && tcp_sk(sk)->app_limited)
		spline_on_idle_restart(spline_state(sk));
}

/* Pacing at 2.15 x bw needs send buffer for about three windows. */
static u32 spline_sndbuf_expand(struct sock *sk)
{
	return 3;
}

static u32 spline_min_tso_segs(struct sock *sk)
{
	return READ_ONCE(sk->sk_pacing_rate) < SPLINE_MIN_TSO_RATE_BYTES_PER_SEC ? 1 : 2;
}

/* INET_DIAG (`ss -tin`): the model in BBR's fields, which ss prints as
 * bbr:(bw:..,mrtt:..,pacing_gain:..,cwnd_gain:..): bw the bandwidth estimate,
 * mrtt min_rtt, pacing_gain the mode's (PROBE_BW 2.15 below a BDP in flight,
 * 1.25 from there; PROBE_RTT 0.98, DRAIN_PROBE 0.39, START_PROBE 1), cwnd_gain
 * the Spline window over bw x min_rtt.
 * (The eBPF build has no get_info: struct_ops does not offer it.)
 */
static size_t spline_get_info(struct sock *sk, u32 ext, int *attr, union tcp_cc_info *info)
{
	const struct spline_state *s = spline_state(sk);

	if (!(ext & (1 << (INET_DIAG_BBRINFO - 1))) && !(ext & (1 << (INET_DIAG_VEGASINFO - 1))))
		return 0;
	memset(&info->bbr, 0, sizeof(info->bbr));
	info->bbr.bbr_bw_lo = spline_bw_bytes_per_sec(s);
	info->bbr.bbr_bw_hi = 0;
	info->bbr.bbr_min_rtt = s->min_rtt_us;
	info->bbr.bbr_pacing_gain =
		spline_pacing_gain_q8(s, tcp_packets_in_flight(tcp_sk(sk)), tcp_sk(sk)->mss_cache);
	info->bbr.bbr_cwnd_gain = spline_window_gain_q8(s, tcp_sk(sk)->mss_cache);
	*attr = INET_DIAG_BBRINFO;
	return sizeof(info->bbr);
}

static struct tcp_congestion_ops tcp_spline_cong_ops __read_mostly = {
	.name = "spline",
	.owner = THIS_MODULE,
	.init = spline_init,
	.cong_control = spline_cong_control,
	.ssthresh = spline_ssthresh,
	.undo_cwnd = spline_undo_cwnd,
	.set_state = spline_set_state,
	.cwnd_event = spline_cwnd_event,
	.sndbuf_expand = spline_sndbuf_expand,
	.min_tso_segs = spline_min_tso_segs,
	.get_info = spline_get_info,
};

static int __init tcp_spline_register(void)
{
	BUILD_BUG_ON(sizeof(struct spline_state) > ICSK_CA_PRIV_SIZE);
	return tcp_register_congestion_control(&tcp_spline_cong_ops);
}

static void __exit tcp_spline_unregister(void)
{
	tcp_unregister_congestion_control(&tcp_spline_cong_ops);
}

module_init(tcp_spline_register);
module_exit(tcp_spline_unregister);

MODULE_AUTHOR("Spline toolkit contributors");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("TCP Spline: model-based congestion control for lossy, jittery paths");
