// SPDX-License-Identifier: GPL-2.0
/* Spline as an eBPF struct_ops tcp_congestion_ops, for kernels with BTF where
 * loading a module is not possible (Secure Boot, managed hosts, containers).
 *
 * The algorithm is spline_core.h, the same file the kernel module includes;
 * this file, like tcp_spline.c, only moves numbers between the socket and the
 * core. Build: make -C module bpf (vmlinux.h is generated from this kernel's
 * BTF into module/build/). Load and unload:
 *
 *   bpftool struct_ops register module/spline.bpf.o
 *   iperf3 -C spline ...            (select per socket, TCP_CONGESTION)
 *   bpftool struct_ops unregister name spline
 *
 * Do not make it the system default with sysctl: a struct_ops congestion
 * control that is some namespace's default cannot be freed again.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "spline_bpf_abi.h" /* generated: SPLINE_CONG_CONTROL_HAS_ACK_FLAG */
#include "spline_core.h"

char _license[] SEC("license") = "GPL";

/* Below this pacing rate (bytes/s, 1.2 Mbit/s) one segment per TSO burst. */
#define SPLINE_MIN_TSO_RATE_BYTES_PER_SEC 150000UL

static __always_inline struct tcp_sock *spline_tcp_sk(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct spline_state *spline_ca(struct sock *sk)
{
	return (struct spline_state *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* The kernel's tcp_packets_in_flight(). */
static __always_inline u32 spline_packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* The size check the module does with BUILD_BUG_ON. */
_Static_assert(sizeof(struct spline_state) <=
		       sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv),
	       "spline_state must fit icsk_ca_priv");

SEC("struct_ops/spline_init")
void BPF_PROG(spline_init, struct sock *sk)
{
	struct tcp_sock *tp = spline_tcp_sk(sk);

	spline_init_state(spline_ca(sk), tp->snd_cwnd, bpf_get_prandom_u32());
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
}

static __always_inline void spline_apply(struct sock *sk, const struct rate_sample *rs)
{
	struct tcp_sock *tp = spline_tcp_sk(sk);
	struct spline_ack a = {};
	struct spline_out out = {};

	a.now_us = tp->tcp_mstamp;
	a.max_pacing_rate_bytes_per_sec = sk->sk_max_pacing_rate;
	a.rs_interval_us = rs->interval_us;
	a.rs_rtt_us = rs->rtt_us;
	a.rs_delivered_pkts = rs->delivered;
	a.rs_losses_pkts = rs->losses;
	a.rs_prior_delivered_pkts = rs->prior_delivered;
	a.delivered_total_pkts = tp->delivered;
	a.lost_total_pkts = tp->lost;
	a.acked_sacked_pkts = rs->acked_sacked;
	a.prior_in_flight_pkts = rs->prior_in_flight;
	a.in_flight_pkts = spline_packets_in_flight(tp);
	a.mss_bytes = tp->mss_cache;
	a.srtt_us = tp->srtt_us >> 3;
	a.cwnd_pkts = tp->snd_cwnd;
	a.cwnd_clamp_pkts = tp->snd_cwnd_clamp;
	a.reord_seen_total = tp->reord_seen;
	a.app_limited = rs->is_app_limited;

	spline_on_ack(spline_ca(sk), &a, &out);
	tp->snd_cwnd = out.cwnd_pkts;
	if (out.pacing_valid)
		sk->sk_pacing_rate = out.pacing_rate_bytes_per_sec;
}

#if SPLINE_CONG_CONTROL_HAS_ACK_FLAG
SEC("struct_ops/spline_cong_control")
void BPF_PROG(spline_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	spline_apply(sk, rs);
}
#else
SEC("struct_ops/spline_cong_control")
void BPF_PROG(spline_cong_control, struct sock *sk, const struct rate_sample *rs)
{
	spline_apply(sk, rs);
}
#endif

/* Loss alone does not halve the window: keep ssthresh, remember the window. */
SEC("struct_ops/spline_ssthresh")
__u32 BPF_PROG(spline_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = spline_tcp_sk(sk);

	spline_save_cwnd(spline_ca(sk), tp->snd_cwnd);
	return tp->snd_ssthresh;
}

SEC("struct_ops/spline_undo_cwnd")
__u32 BPF_PROG(spline_undo_cwnd, struct sock *sk)
{
	return spline_undo_cwnd_pkts(spline_ca(sk), spline_tcp_sk(sk)->snd_cwnd);
}

SEC("struct_ops/spline_set_state")
void BPF_PROG(spline_set_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		spline_on_rto(spline_ca(sk), spline_tcp_sk(sk)->snd_cwnd);
}

SEC("struct_ops/spline_cwnd_event")
void BPF_PROG(spline_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	if (event == CA_EVENT_TX_START && spline_tcp_sk(sk)->app_limited)
		spline_on_idle_restart(spline_ca(sk));
}

/* Pacing at 2.15 x bw needs send buffer for about three windows. */
SEC("struct_ops/spline_sndbuf_expand")
__u32 BPF_PROG(spline_sndbuf_expand, struct sock *sk)
{
	return 3;
}

SEC("struct_ops/spline_min_tso_segs")
__u32 BPF_PROG(spline_min_tso_segs, struct sock *sk)
{
	return sk->sk_pacing_rate < SPLINE_MIN_TSO_RATE_BYTES_PER_SEC ? 1 : 2;
}

SEC(".struct_ops")
struct tcp_congestion_ops spline = {
	.init = (void *)spline_init,
	.cong_control = (void *)spline_cong_control,
	.ssthresh = (void *)spline_ssthresh,
	.undo_cwnd = (void *)spline_undo_cwnd,
	.set_state = (void *)spline_set_state,
	.cwnd_event = (void *)spline_cwnd_event,
	.sndbuf_expand = (void *)spline_sndbuf_expand,
	.min_tso_segs = (void *)spline_min_tso_segs,
	.name = "spline",
};
