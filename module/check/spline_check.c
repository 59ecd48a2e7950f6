// SPDX-License-Identifier: GPL-2.0
/*
 * spline_check: drive the Spline core (spline_core.h, the very file the
 * kernel module and the eBPF program include) with scripted ACK sequences
 * and check what the design predicts.
 *
 * Two kinds of checks:
 *  - unit checks on the core's pieces (state size, overflow at 10 Gbit/s x
 *    1 s, no division by zero before the first RTT sample, the loss backoff
 *    factors, the end-of-epoch mode decision table);
 *  - scenario checks on a small packet-level simulator: senders (Spline, or a
 *    Reno-style AIMD reference) share one FIFO bottleneck with a rate, a
 *    buffer, random loss and a propagation delay with optional jitter (after
 *    the bottleneck, or in a delay line in front of it that keeps order); the
 *    receiver ACKs every packet; the sender builds kernel-style rate samples
 *    (tcp_rate.c semantics: delivered, interval = max(send, ack interval),
 *    app-limited marking), detects loss when a later packet is ACKed (FIFO,
 *    no reordering), and has an RTO.
 *
 * Output: one line per check ("PASS ..." / "FAIL ...: why"), scenario
 * figures, and as the last line "N passed, N failed". Exit status is
 * non-zero when any check failed.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef int16_t s16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

#include "spline_core.h"

#define ICSK_CA_PRIV_SIZE_6X 104 /* 13 x u64 on Linux 6.x */
#define MSS_BYTES	     1448U
#define RING		     (1U << 18) /* packet records per flow */
#define RMASK		     (RING - 1)
#define QCAP_MAX	     65536U
#define DT_US		     20ULL /* simulation step */
#define CWND_CLAMP_PKTS	     100000U
#define MAX_FLOWS	     2
#define MAX_TRANSITIONS	     512

static int n_pass, n_fail;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (cond) {                                                                        \
			n_pass++;                                                                  \
			printf("PASS ");                                                           \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
		} else {                                                                           \
			n_fail++;                                                                  \
			printf("FAIL ");                                                           \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
		}                                                                                  \
	} while (0)

/* --- a deterministic PRNG for the simulator (not the core's) --- */
static u64 sim_rng = 0x853c49e6748fea9bULL;
static double sim_uniform(void)
{
	sim_rng ^= sim_rng >> 12;
	sim_rng ^= sim_rng << 25;
	sim_rng ^= sim_rng >> 27;
	return (double)((sim_rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

#define QUEUE_BIN_US 250
#define QUEUE_BINS   2048 /* up to 512 ms */

enum { PKT_FREE = 0, PKT_INFLIGHT, PKT_DELIVERED, PKT_LOST };
enum cca { CCA_SPLINE, CCA_RENO, CCA_CUBIC };

struct pkt {
	u64 sent_us, first_tx_us, delivered_us;
	u32 delivered;
	u8 state, app_limited;
};

struct transition {
	u64 t_us;
	u32 round;
	u8 mode;
};

struct flow {
	enum cca cca;
	struct spline_state st;
	u32 cwnd, ssthresh, cwnd_cnt;
	u64 pacing_bytes_per_sec, next_send_us;
	u32 srtt_us;
	u32 next_seq, snd_una, in_flight, delivered, lost, sent;
	u64 delivered_mstamp, first_tx_mstamp, last_progress_us, recovery_end_us;
	u32 app_limited_mark;
	double app_rate_bytes_per_sec, app_credit_bytes; /* 0: bulk */
	u64 start_us;
	u64 ack_last_arrival_us;
	/* receiver: packets that reached it wait (ack_head..) until it ACKs them together */
	u32 rx_batch_pkts; /* this ACK covers this many packets (drawn per ACK) */
	/* CUBIC reference: window before the last reduction, start of the growth epoch, the
	 * smallest RTT seen (us)
	 */
	double cubic_wmax_pkts;
	u64 cubic_epoch_us;
	u32 cubic_min_rtt_us;
	u32 *ack_q;
	u64 *ack_t;
	u32 ack_head, ack_tail;
	struct pkt *pk;
	/* statistics */
	u64 mode_acks[4];
	u32 rounds, max_loss_cnt, lt_use_acks, max_lt_bw_bytes_per_sec;
	u32 min_cwnd_after_start, halvings_on_loss;
	u32 delivered_mark;
	u64 mark_us; /* goodput window */
	struct transition tr[MAX_TRANSITIONS];
	u32 n_tr;
	u32 epoch_lengths[SPL_EPOCH_MAX_ROUNDS + 2];
	u32 epoch_start_round;
	u32 rto_count;
	u64 cwnd_sum_pkts, cwnd_acks; /* the window after each ACK past the goodput mark */
	/* queueing delay of each ACKed packet after the goodput mark (RTT - propagation, jitter
	 * included), in QUEUE_BIN_US bins
	 */
	u32 queue_hist[QUEUE_BINS];
};

struct link {
	u64 rate_bytes_per_sec;
	u32 qcap_pkts, prop_rtt_us, jitter_us;
	double loss_p;
	u32 q_flow[QCAP_MAX], q_idx[QCAP_MAX];
	u64 q_enq[QCAP_MAX];
	u32 q_head, q_len;
	u64 busy_until_us;
	/* receiver ACKs: 1 = one ACK per packet, evenly spaced (ideal); N > 1 = each ACK
	 * covers 2 packets (delayed ACK) half the time, else 1..N (GRO coalescing, stretch
	 * ACKs), and a packet waits at most ACK_FLUSH_US for its ACK
	 */
	u32 ack_stretch_max_pkts;
	/* guest stalls (a busy TCG host deschedules the VM that holds sender, router and
	 * receiver alike): every stall_gap_mean_us on average (exponential) nothing moves
	 * for up to stall_max_us (uniform); the link idles meanwhile and packets whose delay
	 * ran out during the stall arrive together after it. 0: none
	 */
	u64 stall_gap_mean_us, stall_max_us, stall_until_us, next_stall_us, stalled_us;
	/* a delay line in front of the queue that keeps packet order (netem delay and jitter
	 * with a rate, as the VM's in-order jitter path builds it: netem, then tbf): each packet
	 * waits order_delay_us + uniform(0, order_jitter_us), and never leaves before the one
	 * ahead of it; 0: none
	 */
	u32 order_delay_us, order_jitter_us;
	u32 dl_flow[QCAP_MAX], dl_idx[QCAP_MAX];
	u64 dl_release_us[QCAP_MAX], dl_last_release_us;
	u32 dl_head, dl_len;
	/* policer (token bucket in front of the queue), 0: none */
	u64 police_bytes_per_sec;
	double police_tokens, police_burst_bytes;
};

static struct link L;
static u64 g_mark_at_us; /* goodput is counted from here on */
static struct flow F[MAX_FLOWS];
static int n_flows;

static void flow_init(struct flow *f, enum cca cca, u64 start_us, u32 seed)
{
	u32 *q = f->ack_q;
	u64 *t = f->ack_t;
	struct pkt *pk = f->pk;

	if (!q) {
		q = calloc(RING, sizeof(*q));
		t = calloc(RING, sizeof(*t));
		pk = calloc(RING, sizeof(*pk));
		if (!q || !t || !pk) {
			perror("calloc");
			exit(2);
		}
	}
	memset(pk, 0, RING * sizeof(*pk));
	memset(f, 0, sizeof(*f));
	f->ack_q = q;
	f->ack_t = t;
	f->pk = pk;
	f->cca = cca;
	f->cwnd = 10;
	f->ssthresh = 0xffffffffU;
	f->start_us = start_us;
	f->min_cwnd_after_start = 0xffffffffU;
	spline_init_state(&f->st, f->cwnd, seed);
}

static void link_init(u64 rate_bps, u32 rtt_ms, u32 buffer_bdp_pct, double loss_p, u32 jitter_ms)
{
	u64 bdp_bytes;

	memset(&L, 0, sizeof(L));
	L.rate_bytes_per_sec = rate_bps / 8;
	L.prop_rtt_us = rtt_ms * 1000;
	L.jitter_us = jitter_ms * 1000;
	L.loss_p = loss_p;
	bdp_bytes = L.rate_bytes_per_sec * L.prop_rtt_us / 1000000;
	L.qcap_pkts = (u32)(bdp_bytes * buffer_bdp_pct / 100 / MSS_BYTES);
	if (L.qcap_pkts < 8)
		L.qcap_pkts = 8;
	if (L.qcap_pkts > QCAP_MAX)
		L.qcap_pkts = QCAP_MAX;
	L.ack_stretch_max_pkts = getenv("SPLINE_CHECK_ACK_STRETCH")
					 ? (u32)atoi(getenv("SPLINE_CHECK_ACK_STRETCH"))
					 : 1;
}

static u32 bdp_pkts(void)
{
	return (u32)(L.rate_bytes_per_sec * L.prop_rtt_us / 1000000 / MSS_BYTES);
}

/* --- path --- */
/* Into the bottleneck's FIFO, or dropped when its buffer is full. */
static void fifo_enqueue(u32 fi, u32 idx, u64 now)
{
	u32 slot;

	if (L.q_len >= L.qcap_pkts)
		return;
	slot = (L.q_head + L.q_len) % QCAP_MAX;
	L.q_flow[slot] = fi;
	L.q_idx[slot] = idx;
	L.q_enq[slot] = now;
	L.q_len++;
}

/* Into the in-order delay line (L.order_delay_us), released by delay_line_release. */
static void delay_line_enqueue(u32 fi, u32 idx, u64 now)
{
	u64 release = now + L.order_delay_us + (u64)(sim_uniform() * L.order_jitter_us);
	u32 slot = (L.dl_head + L.dl_len) % QCAP_MAX;

	if (release < L.dl_last_release_us) /* in order: not before the one ahead */
		release = L.dl_last_release_us;
	L.dl_last_release_us = release;
	L.dl_flow[slot] = fi;
	L.dl_idx[slot] = idx;
	L.dl_release_us[slot] = release;
	L.dl_len++;
}

static void delay_line_release(u64 now)
{
	while (L.dl_len && L.dl_release_us[L.dl_head] <= now) {
		fifo_enqueue(L.dl_flow[L.dl_head], L.dl_idx[L.dl_head], now);
		L.dl_head = (L.dl_head + 1) % QCAP_MAX;
		L.dl_len--;
	}
}

/* --- sender --- */
static void flow_send(struct flow *f, u64 now, int fi)
{
	while (f->in_flight < f->cwnd && f->next_send_us <= now) {
		struct pkt *p;
		u32 idx;

		if (f->next_seq - f->snd_una >= RING - 1)
			return;
		if (f->app_rate_bytes_per_sec > 0 && f->app_credit_bytes < MSS_BYTES) {
			/* nothing to send although the window allows: app-limited */
			f->app_limited_mark = (f->delivered + f->in_flight) ?: 1;
			return;
		}
		if (f->app_rate_bytes_per_sec > 0)
			f->app_credit_bytes -= MSS_BYTES;
		idx = f->next_seq++;
		p = &f->pk[idx & RMASK];
		if (!f->in_flight) {
			f->first_tx_mstamp = now;
			f->delivered_mstamp = now;
		}
		p->sent_us = now;
		p->first_tx_us = f->first_tx_mstamp;
		p->delivered_us = f->delivered_mstamp;
		p->delivered = f->delivered;
		p->app_limited = f->app_limited_mark != 0;
		p->state = PKT_INFLIGHT;
		f->in_flight++;
		f->sent++;
		if (f->pacing_bytes_per_sec)
			f->next_send_us = (f->next_send_us > now ? f->next_send_us : now) +
					  (u64)MSS_BYTES * 1000000ULL / f->pacing_bytes_per_sec;
		/* the path: random loss, policer, then the FIFO */
		if (L.loss_p > 0 && sim_uniform() < L.loss_p)
			continue;
		if (L.police_bytes_per_sec) {
			if (L.police_tokens < MSS_BYTES)
				continue;
			L.police_tokens -= MSS_BYTES;
		}
		if (L.order_delay_us)
			delay_line_enqueue((u32)fi, idx, now);
		else
			fifo_enqueue((u32)fi, idx, now);
	}
}

static void flow_record_mode(struct flow *f, u64 now)
{
	if (f->n_tr == 0 || f->tr[f->n_tr - 1].mode != f->st.mode) {
		if (f->n_tr < MAX_TRANSITIONS) {
			f->tr[f->n_tr].t_us = now;
			f->tr[f->n_tr].round = f->rounds;
			f->tr[f->n_tr].mode = f->st.mode;
			f->n_tr++;
		}
	}
}

/* A loss-based reference's answer to losses: the window x beta once per recovery (one
 * smoothed RTT); an ACK that reports losses grows nothing. True when it reported some.
 */
static bool loss_based_reduce(struct flow *f, u32 losses, u64 now, double beta)
{
	u32 reduced = (u32)(f->cwnd * beta);

	if (!losses)
		return false;
	if (now >= f->recovery_end_us) {
		f->cubic_wmax_pkts = f->cwnd;
		f->ssthresh = reduced > 2 ? reduced : 2;
		f->cwnd = f->ssthresh;
		f->cubic_epoch_us = 0;
		f->recovery_end_us = now + f->srtt_us;
	}
	return true;
}

/* Reno reference: halve once per recovery, +1 packet per window of ACKed packets. */
#define RENO_BETA 0.5
static void reno_on_ack(struct flow *f, u32 acked, u32 losses, u64 now)
{
	if (loss_based_reduce(f, losses, now, RENO_BETA))
		return;
	while (acked--) {
		if (f->cwnd < f->ssthresh) {
			f->cwnd++;
		} else if (++f->cwnd_cnt >= f->cwnd) {
			f->cwnd_cnt = 0;
			f->cwnd++;
		}
	}
}

/* CUBIC reference (RFC 9438, as Linux's tcp_cubic without HyStart): x0.7 once per
 * recovery; in congestion avoidance the window follows W(t) = C (t - K)^3 + W_max,
 * C = 0.4 packets/s^3, t counted from the reduction plus min_rtt, or the Reno-friendly
 * estimate where that is larger. After a reduction it keeps 0.7 of what filled the
 * buffer, so beside Spline it holds a standing queue, which Reno drains when it halves.
 */
#define CUBIC_BETA 0.7
#define CUBIC_C	   0.4
static void cubic_on_ack(struct flow *f, u32 acked, u32 losses, u64 now, u32 rtt_us)
{
	double t_s, k_s, target, w_reno;

	if (!f->cubic_min_rtt_us || rtt_us < f->cubic_min_rtt_us)
		f->cubic_min_rtt_us = rtt_us;
	if (loss_based_reduce(f, losses, now, CUBIC_BETA))
		return;
	while (acked--) {
		if (f->cwnd < f->ssthresh) {
			f->cwnd++;
			continue;
		}
		if (!f->cubic_epoch_us) {
			f->cubic_epoch_us = now;
			if (f->cubic_wmax_pkts < f->cwnd)
				f->cubic_wmax_pkts = f->cwnd;
			f->cwnd_cnt = 0;
		}
		t_s = (double)(now - f->cubic_epoch_us + f->cubic_min_rtt_us) / 1e6;
		k_s = cbrt(f->cubic_wmax_pkts * (1 - CUBIC_BETA) / CUBIC_C);
		target = CUBIC_C * (t_s - k_s) * (t_s - k_s) * (t_s - k_s) + f->cubic_wmax_pkts;
		w_reno = f->cubic_wmax_pkts * CUBIC_BETA + 3 * (1 - CUBIC_BETA) / (1 + CUBIC_BETA) *
								   t_s * 1e6 /
								   (f->srtt_us ? f->srtt_us : 1);
		if (w_reno > target)
			target = w_reno;
		if (target > f->cwnd) {
			double cnt = f->cwnd / (target - f->cwnd);

			if (++f->cwnd_cnt >= (cnt > 1 ? cnt : 1)) {
				f->cwnd_cnt = 0;
				f->cwnd++;
			}
		}
	}
}

/* One ACK from the receiver covering the n packets idx[0..n-1] (in arrival order): each
 * is delivered, anything sent before it and still out is lost (FIFO, no reordering),
 * and the newest one gives the rate and RTT sample, as tcp_rate.c does.
 */
static void flow_ack(struct flow *f, const u32 *idx, u32 n, u64 now)
{
	struct pkt *p = NULL;
	struct spline_ack a;
	struct spline_out out;
	u32 prior_in_flight = f->in_flight, losses = 0, acked = 0, rtt_us, j, k;
	u64 snd_int, ack_int;
	s64 interval;
	u8 prev_epoch_left = f->st.epoch_rounds_left;
	u32 cwnd_before = f->cwnd;

	for (k = 0; k < n; k++) {
		struct pkt *q = &f->pk[idx[k] & RMASK];

		if (q->state == PKT_LOST) { /* delivered after an RTO */
			q->state = PKT_DELIVERED;
			f->delivered++;
			continue;
		}
		if (q->state != PKT_INFLIGHT)
			continue;
		q->state = PKT_DELIVERED;
		f->in_flight--;
		f->delivered++;
		acked++;
		f->delivered_mstamp = now;
		f->first_tx_mstamp = q->sent_us;
		f->last_progress_us = now;
		if (f->app_limited_mark && f->delivered > f->app_limited_mark)
			f->app_limited_mark = 0;
		for (j = f->snd_una; j != idx[k]; j++) {
			struct pkt *r = &f->pk[j & RMASK];

			if (r->state == PKT_INFLIGHT) {
				r->state = PKT_LOST;
				f->in_flight--;
				f->lost++;
				losses++;
			}
		}
		while (f->snd_una != f->next_seq && f->pk[f->snd_una & RMASK].state != PKT_INFLIGHT)
			f->snd_una++;
		rtt_us = (u32)(now - q->sent_us);
		if (f->mark_us && now >= f->mark_us) {
			u32 bin = rtt_us > L.prop_rtt_us ? (rtt_us - L.prop_rtt_us) / QUEUE_BIN_US
							 : 0;

			f->queue_hist[bin < QUEUE_BINS ? bin : QUEUE_BINS - 1]++;
		}
		p = q;
	}
	if (!p)
		return;

	rtt_us = (u32)(now - p->sent_us);
	f->srtt_us = f->srtt_us ? f->srtt_us - (f->srtt_us >> 3) + (rtt_us >> 3) : rtt_us;
	snd_int = p->sent_us - p->first_tx_us;
	ack_int = now - p->delivered_us;
	interval = (s64)(snd_int > ack_int ? snd_int : ack_int);
	if (f->st.min_rtt_us && interval < (s64)f->st.min_rtt_us)
		interval = -1; /* as tcp_rate_gen(): shorter than min_rtt is noise */

	if (f->cca == CCA_RENO) {
		reno_on_ack(f, acked, losses, now);
		return;
	}
	if (f->cca == CCA_CUBIC) {
		cubic_on_ack(f, acked, losses, now, rtt_us);
		return;
	}

	memset(&a, 0, sizeof(a));
	a.now_us = now;
	a.rs_interval_us = interval;
	a.rs_rtt_us = rtt_us;
	a.rs_delivered_pkts = (s32)(f->delivered - p->delivered);
	a.rs_losses_pkts = (s32)losses;
	a.rs_prior_delivered_pkts = p->delivered;
	a.delivered_total_pkts = f->delivered;
	a.lost_total_pkts = f->lost;
	a.acked_sacked_pkts = acked;
	a.prior_in_flight_pkts = prior_in_flight;
	a.in_flight_pkts = f->in_flight;
	a.mss_bytes = MSS_BYTES;
	a.srtt_us = f->srtt_us;
	a.cwnd_pkts = f->cwnd;
	a.cwnd_clamp_pkts = CWND_CLAMP_PKTS;
	a.app_limited = p->app_limited;
	spline_on_ack(&f->st, &a, &out);
	f->cwnd = out.cwnd_pkts;
	if (out.pacing_valid)
		f->pacing_bytes_per_sec = out.pacing_rate_bytes_per_sec;

	/* statistics */
	if (f->st.next_round_delivered_pkts == f->delivered)
		f->rounds++;
	if (f->st.epoch_rounds_left > prev_epoch_left && f->st.mode != SPL_START_PROBE) {
		u32 len = f->rounds - f->epoch_start_round;

		if (f->epoch_start_round && len <= SPL_EPOCH_MAX_ROUNDS + 1)
			f->epoch_lengths[len]++;
		f->epoch_start_round = f->rounds;
	}
	f->mode_acks[f->st.mode]++;
	if (f->mark_us && now >= f->mark_us) {
		f->cwnd_sum_pkts += f->cwnd;
		f->cwnd_acks++;
	}
	if (f->st.loss_cnt > f->max_loss_cnt)
		f->max_loss_cnt = f->st.loss_cnt;
	if (f->st.lt_use_rounds) {
		f->lt_use_acks++;
		if (f->st.lt_bw_bytes_per_sec > f->max_lt_bw_bytes_per_sec)
			f->max_lt_bw_bytes_per_sec = f->st.lt_bw_bytes_per_sec;
	}
	if (f->st.mode != SPL_START_PROBE && f->cwnd < f->min_cwnd_after_start)
		f->min_cwnd_after_start = f->cwnd;
	if (losses && f->cwnd * 2 <= cwnd_before)
		f->halvings_on_loss++;
	flow_record_mode(f, now);
}

/* How many packets the receiver's next ACK covers (see struct link). */
static u32 rx_draw_batch(void)
{
	if (L.ack_stretch_max_pkts <= 1)
		return 1;
	if (sim_uniform() < 0.5)
		return 2;
	return 1 + (u32)(sim_uniform() * L.ack_stretch_max_pkts);
}

/* The receiver: ACK the packets that reached it, rx_batch_pkts at a time, or all of them
 * once the oldest has waited ACK_FLUSH_US.
 */
#define ACK_FLUSH_US 2000ULL
#define ACK_MAX_PKTS 64U
static void flow_receive(struct flow *f, u64 now)
{
	u32 batch[ACK_MAX_PKTS];

	for (;;) {
		u32 ready = 0, want, k;

		while (f->ack_head + ready != f->ack_tail && ready < ACK_MAX_PKTS &&
		       f->ack_t[(f->ack_head + ready) & RMASK] <= now)
			ready++;
		if (!ready)
			return;
		if (!f->rx_batch_pkts)
			f->rx_batch_pkts = rx_draw_batch();
		want = f->rx_batch_pkts;
		if (ready < want) {
			if (now - f->ack_t[f->ack_head & RMASK] < ACK_FLUSH_US)
				return;
			want = ready;
		}
		for (k = 0; k < want; k++)
			batch[k] = f->ack_q[(f->ack_head + k) & RMASK];
		f->ack_head += want;
		f->rx_batch_pkts = 0;
		flow_ack(f, batch, want, now);
	}
}

static void flow_rto(struct flow *f, u64 now)
{
	u32 j;

	for (j = f->snd_una; j != f->next_seq; j++) {
		struct pkt *q = &f->pk[j & RMASK];

		if (q->state == PKT_INFLIGHT) {
			q->state = PKT_LOST;
			f->lost++;
		}
	}
	f->in_flight = 0;
	f->rto_count++;
	if (f->cca == CCA_SPLINE) {
		spline_on_rto(&f->st, f->cwnd);
	} else {
		u32 reduced = (u32)(f->cwnd * (f->cca == CCA_CUBIC ? CUBIC_BETA : RENO_BETA));

		f->cubic_wmax_pkts = f->cwnd;
		f->ssthresh = reduced > 2 ? reduced : 2;
		f->cubic_epoch_us = 0;
	}
	f->cwnd = 1;
	f->last_progress_us = now;
	f->next_send_us = now;
}

/* Run the simulation until end_us; hook (if any) runs every 100 ms. */
typedef void (*sim_hook)(u64 now_us);

static void simulate(u64 end_us, sim_hook hook)
{
	u64 now, next_hook = 0;
	int i;

	for (now = 0; now < end_us; now += DT_US) {
		if (hook && now >= next_hook) {
			hook(now);
			next_hook = now + 100000;
		}
		if (L.stall_gap_mean_us) {
			if (now < L.stall_until_us)
				continue;
			if (L.stall_until_us && L.busy_until_us < L.stall_until_us)
				L.busy_until_us = L.stall_until_us; /* the link idled through it */
			if (!L.next_stall_us)
				L.next_stall_us =
					now - (u64)(log(1 - sim_uniform()) * L.stall_gap_mean_us);
			if (now >= L.next_stall_us) {
				L.stall_until_us = now + (u64)(sim_uniform() * L.stall_max_us);
				if (now >= g_mark_at_us)
					L.stalled_us += L.stall_until_us - now;
				L.next_stall_us = L.stall_until_us - (u64)(log(1 - sim_uniform()) *
									   L.stall_gap_mean_us);
				continue;
			}
		}
		if (L.police_bytes_per_sec) {
			L.police_tokens += (double)L.police_bytes_per_sec * DT_US / 1e6;
			if (L.police_tokens > L.police_burst_bytes)
				L.police_tokens = L.police_burst_bytes;
		}
		delay_line_release(now);
		/* bottleneck service */
		while (L.q_len) {
			u64 start = L.busy_until_us > L.q_enq[L.q_head] ? L.busy_until_us
									: L.q_enq[L.q_head];
			u64 depart = start + (u64)MSS_BYTES * 1000000ULL / L.rate_bytes_per_sec;
			struct flow *f;
			u64 arrive;

			if (depart > now)
				break;
			f = &F[L.q_flow[L.q_head]];
			arrive = depart + L.prop_rtt_us;
			if (L.jitter_us)
				arrive += (u64)(sim_uniform() * L.jitter_us);
			if (arrive < f->ack_last_arrival_us) /* no reordering */
				arrive = f->ack_last_arrival_us;
			f->ack_last_arrival_us = arrive;
			f->ack_q[f->ack_tail & RMASK] = L.q_idx[L.q_head];
			f->ack_t[f->ack_tail & RMASK] = arrive;
			f->ack_tail++;
			L.busy_until_us = depart;
			L.q_head = (L.q_head + 1) % QCAP_MAX;
			L.q_len--;
		}
		for (i = 0; i < n_flows; i++) {
			struct flow *f = &F[i];
			u64 rto_us;

			if (now < f->start_us)
				continue;
			flow_receive(f, now);
			rto_us = f->srtt_us ? 3ULL * f->srtt_us : 1000000ULL;
			if (rto_us < 200000)
				rto_us = 200000;
			if (f->in_flight && now - f->last_progress_us > rto_us)
				flow_rto(f, now);
			if (f->app_rate_bytes_per_sec > 0) {
				f->app_credit_bytes += f->app_rate_bytes_per_sec * DT_US / 1e6;
				if (f->app_credit_bytes > 64.0 * MSS_BYTES)
					f->app_credit_bytes = 64.0 * MSS_BYTES;
			}
			if (!f->last_progress_us)
				f->last_progress_us = now;
			flow_send(f, now, i);
		}
	}
}

static void mark_goodput(struct flow *f, u64 now)
{
	f->delivered_mark = f->delivered;
	f->mark_us = now;
}

static double goodput_mbps(const struct flow *f, u64 now)
{
	if (now <= f->mark_us)
		return 0;
	return (double)(f->delivered - f->delivered_mark) * MSS_BYTES * 8.0 /
	       (double)(now - f->mark_us);
}

static double bw_est_mbps(const struct flow *f)
{
	return spline_bw_bytes_per_sec(&f->st) * 8.0 / 1e6;
}

/* p-th percentile (0..100) of the queueing delay after the goodput mark, ms (bin upper edge) */
static double queue_delay_pct_ms(const struct flow *f, double pct)
{
	u64 total = 0, seen = 0;
	u32 i;

	for (i = 0; i < QUEUE_BINS; i++)
		total += f->queue_hist[i];
	for (i = 0; i < QUEUE_BINS && total; i++) {
		seen += f->queue_hist[i];
		if ((double)seen >= pct / 100.0 * (double)total)
			return (i + 1) * QUEUE_BIN_US / 1000.0;
	}
	return 0;
}

static const char *mode_name(u8 m)
{
	static const char *names[] = {"START_PROBE", "PROBE_BW", "PROBE_RTT", "DRAIN_PROBE"};

	return m < 4 ? names[m] : "?";
}

static const char *cca_name(enum cca cca)
{
	return cca == CCA_SPLINE ? "spline" : cca == CCA_CUBIC ? "cubic" : "reno";
}

static void print_figures(const char *name, const struct flow *f, u64 end_us)
{
	u64 total = f->mode_acks[0] + f->mode_acks[1] + f->mode_acks[2] + f->mode_acks[3];

	if (!total)
		total = 1;
	printf("  [%s] %s: goodput %.2f Mbit/s, sent %u, lost %u (%.2f%%), rto %u, "
	       "bw_est %.2f Mbit/s, min_rtt %.1f ms, cwnd %u pkts, queue p50 %.2f p95 %.2f ms, "
	       "max loss_cnt %u, ACKs by mode: START %.0f%% BW %.0f%% RTT %.0f%% DRAIN %.0f%%\n",
	       name, cca_name(f->cca), goodput_mbps(f, end_us), f->sent, f->lost,
	       f->sent ? 100.0 * f->lost / f->sent : 0.0, f->rto_count, bw_est_mbps(f),
	       f->st.min_rtt_us / 1000.0, f->cwnd, queue_delay_pct_ms(f, 50),
	       queue_delay_pct_ms(f, 95), f->max_loss_cnt, 100.0 * f->mode_acks[0] / total,
	       100.0 * f->mode_acks[1] / total, 100.0 * f->mode_acks[2] / total,
	       100.0 * f->mode_acks[3] / total);
}

/* --- hooks and scenario state --- */
static void hook_mark(u64 now)
{
	int i;

	if (now == g_mark_at_us)
		for (i = 0; i < n_flows; i++)
			mark_goodput(&F[i], now);
}

static double single_flow(enum cca cca, u64 warm_us, u64 end_us, u32 seed, const char *name)
{
	n_flows = 1;
	flow_init(&F[0], cca, 0, seed);
	g_mark_at_us = warm_us;
	simulate(end_us, hook_mark);
	print_figures(name, &F[0], end_us);
	return goodput_mbps(&F[0], end_us);
}

/* ================================ unit checks ================================ */

static void check_state_size(void)
{
	CHECK(sizeof(struct spline_state) <= ICSK_CA_PRIV_SIZE_6X,
	      "state fits ICSK_CA_PRIV_SIZE: sizeof(struct spline_state) = %zu <= 104 bytes",
	      sizeof(struct spline_state));
}

static void check_overflow(void)
{
	/* 10 Gbit/s x 1 s x 2.15 in 1448-byte packets */
	u32 bw = 1250000000U, rtt = 1000000U;
	u32 got = spline_bdp_pkts(bw, rtt, SPL_PROBE_BW_PACING_GAIN, MSS_BYTES);
	double want = 1250000000.0 * 1.0 * SPL_PROBE_BW_PACING_GAIN / 256.0 / MSS_BYTES;
	u32 got_max = spline_bdp_pkts(0xffffffffU, 0xffffffffU, SPL_PROBE_BW_PACING_GAIN, 1);
	struct spline_state s;
	struct spline_ack a;
	struct spline_out o;

	CHECK(fabs(got - want) <= 1.0,
	      "no overflow: BDP at 10 Gbit/s x 1 s x 2.15 = %u packets (exact %.1f)", got, want);
	CHECK(got_max == 0xffffffffU,
	      "no overflow: u32-max bw x u32-max RTT saturates at %u instead of wrapping", got_max);

	/* a 10 Gbit/s rate sample with 1 s RTT through the whole update */
	spline_init_state(&s, 10, 1);
	memset(&a, 0, sizeof(a));
	a.now_us = 5000000;
	a.mss_bytes = MSS_BYTES;
	a.cwnd_pkts = 10;
	a.cwnd_clamp_pkts = 0xffffffffU;
	a.srtt_us = 1000000;
	a.rs_rtt_us = 1000000;
	a.rs_interval_us = 1000000;
	a.rs_delivered_pkts = 863259; /* 10 Gbit/s for 1 s */
	a.delivered_total_pkts = 863259;
	a.acked_sacked_pkts = 2;
	a.in_flight_pkts = 863259;
	spline_on_ack(&s, &a, &o);
	s.mode = SPL_PROBE_BW;
	s.stable_acks = 100;
	a.in_flight_pkts = 863259 / 2; /* the pipe half full: pace at 2.15 */
	spline_on_ack(&s, &a, &o);
	CHECK(o.pacing_rate_bytes_per_sec > 2600000000ULL &&
		      o.pacing_rate_bytes_per_sec < 2700000000ULL && o.cwnd_pkts > 1000000 &&
		      o.cwnd_pkts < 1200000,
	      "no overflow: 10 Gbit/s x 1 s RTT in PROBE_BW paces at %.3f Gbit/s (2.15 x 0.99 x "
	      "10) with cwnd %u packets (1.25 BDP)",
	      o.pacing_rate_bytes_per_sec * 8 / 1e9, o.cwnd_pkts);
}

/* PROBE_BW with the pipe full: the probe-then-drain cycle on a path of its own,
 * the window's 1.25 beside a foreign queue or at heavy random loss, 2.15 below
 * a BDP in flight.
 */
static void check_probe_bw_cycle(void)
{
	static const u32 want_q8[SPL_BW_HALF_WIN_ROUNDS] = {320, 192, 256, 256, 256};
	struct spline_state s;
	u32 bdp, r, got;
	bool cycle_ok = true;

	spline_init_state(&s, 10, 1);
	s.mode = SPL_PROBE_BW;
	s.bw_cur_bytes_per_sec = 1250000; /* 10 Mbit/s */
	s.min_rtt_us = 40000;
	bdp = spline_bdp_pkts(1250000, 40000, SPL_UNIT, MSS_BYTES);
	for (r = 0; r < SPL_BW_HALF_WIN_ROUNDS; r++) {
		s.bw_win_rounds = (u8)r;
		got = spline_pacing_gain_q8(&s, bdp, MSS_BYTES);
		if (got != want_q8[r]) {
			printf("  [cycle] round %u of the half-window: gain %u, want %u\n", r, got,
			       want_q8[r]);
			cycle_ok = false;
		}
	}
	CHECK(cycle_ok, "PROBE_BW, pipe full, path its own: pacing cycles 1.25, 0.75, 1, 1, 1 "
			"over the bw half-window (the queue drains once a cycle)");
	s.bw_win_rounds = 2;
	got = spline_pacing_gain_q8(&s, bdp - 1, MSS_BYTES);
	CHECK(got == SPL_PROBE_BW_PACING_GAIN,
	      "PROBE_BW below a BDP in flight paces at 2.15 to fill the pipe (gain %u)", got);
	/* random loss under 8%, no queue standing: the cruise sends what the loss takes on top */
	s.loss_ratio_q8 = 13; /* 5% */
	got = spline_pacing_gain_q8(&s, bdp, MSS_BYTES);
	CHECK(got == (256U << 8) / (256 - 13),
	      "PROBE_BW cruise at 5%% random loss paces at 1 / (1 - 0.05) (gain %u, want %u): the "
	      "bottleneck still gets its rate",
	      got, (256U << 8) / (256 - 13));
	s.queue_rtt_us = s.min_rtt_us + 20000; /* a queue of 20 ms stands: congestive loss */
	got = spline_pacing_gain_q8(&s, bdp, MSS_BYTES);
	CHECK(got == SPL_UNIT,
	      "PROBE_BW cruise with a queue standing adds nothing for loss (gain %u)", got);
	s.queue_rtt_us = 0;
	/* a queue above twice the band in the last round (another flow fills the buffer), or the
	 * random-loss allowance's 8%: window-limited at 1.25 */
	for (r = 0; r < 2; r++) {
		s.congested_rounds = r == 0 ? 1 : 0;
		s.loss_ratio_q8 = r == 0 ? 0 : SPL_LOSS_ALLOW_MIN_Q8;
		got = spline_pacing_gain_q8(&s, bdp, MSS_BYTES);
		CHECK(got == SPL_PROBE_BW_FULL_PACING_GAIN,
		      "PROBE_BW %s stays window-limited at 1.25 in a cruise round (gain %u)",
		      r == 0 ? "after a round with a queue above twice the band"
			     : "at 8% random loss (a cruise at 1.0 would spiral the estimate down)",
		      got);
	}
}

static void check_no_div_zero(void)
{
	struct spline_state s;
	struct spline_ack a;
	struct spline_out o;
	int i;

	spline_init_state(&s, 10, 0);
	memset(&a, 0, sizeof(a));
	a.rs_rtt_us = -1;
	a.rs_interval_us = -1;
	a.rs_delivered_pkts = -1;
	a.cwnd_pkts = 10; /* mss 0, srtt 0, no samples at all */
	for (i = 0; i < 3; i++)
		spline_on_ack(&s, &a, &o);
	CHECK(o.cwnd_pkts >= SPL_MIN_CWND_PKTS && !o.pacing_valid,
	      "no division by zero before the first RTT sample: cwnd %u, pacing left unset",
	      o.cwnd_pkts);
	s.mode = SPL_PROBE_BW;
	a.rs_delivered_pkts = 5;
	a.rs_interval_us = 1000;
	a.acked_sacked_pkts = 1;
	spline_on_ack(&s, &a, &o);
	CHECK(o.cwnd_pkts >= SPL_MIN_CWND_PKTS,
	      "no division by zero with a bw sample but no RTT sample: cwnd %u", o.cwnd_pkts);
}

/* Repairs held past the reordering span (spline_repair_hold_cwnd): on a path that reorders, an
 * ACK that marks losses holds the window at what is in flight for the RTT spread, then lets
 * the repairs go; not again before as long has passed; no hold without reordering, without a
 * spread, or after an RTO; the 16-bit ms stamp survives its wrap.
 */
static u32 hold_at(struct spline_state *s, struct spline_ack *a, u32 now_ms, s32 losses,
		   u32 in_flight)
{
	a->rs_losses_pkts = losses;
	a->in_flight_pkts = in_flight;
	return spline_repair_hold_cwnd(s, a, now_ms, 120);
}

static void reordering_round(struct spline_state *s, struct spline_ack *a, u32 events)
{
	a->reord_seen_total += events;
	spline_update_reordering(s, a);
}

static void check_repair_hold(void)
{
	struct spline_state s;
	struct spline_ack a;
	u32 held, during, end, early, again;

	spline_init_state(&s, 10, 3);
	s.mode = SPL_PROBE_BW;
	s.min_rtt_us = 150000;
	s.queue_rtt_us = 152000; /* the round's smallest RTT sample */
	memset(&a, 0, sizeof(a));
	a.srtt_us = 177000; /* 25 ms above it: a hold of 50 ms */
	a.reord_seen_total = 1000;
	spline_update_reordering(&s, &a);
	reordering_round(&s, &a, 60);
	held = hold_at(&s, &a, 1000, 2, 80);
	during = hold_at(&s, &a, 1049, 0, 70);
	end = hold_at(&s, &a, 1050, 0, 70);
	CHECK(held == 80 && during == 70 && end == 120,
	      "repair hold: a loss on a reordering path holds the window at in flight (%u, %u) for "
	      "the 50 ms span (twice the spread), then 120 (%u)",
	      held, during, end);
	{
		u32 short_held, short_during, short_end, tiny, spaced_early, spaced;

		short_held = hold_at(&s, &a, 1070, 3, 110); /* 20 ms unheld: a 20 ms hold */
		short_during = hold_at(&s, &a, 1089, 0, 100);
		short_end = hold_at(&s, &a, 1090, 0, 100);
		tiny = hold_at(&s, &a, 1091, 3, 110); /* 1 ms unheld: none */
		s.loss_ratio_q8 = 26;		      /* 10% random loss: a 25 ms hold, spaced */
		spaced_early = hold_at(&s, &a, 1110, 3, 110);
		spaced = hold_at(&s, &a, 1116, 3, 110);
		s.loss_ratio_q8 = 0;
		CHECK(short_held == 110 && short_during == 100 && short_end == 120 && tiny == 120 &&
			      spaced_early == 120 && spaced == 110,
		      "repair hold: a loss 20 ms after a hold holds as long as the time unheld "
		      "(%u, %u, released at 20 ms: %u), none after 1 ms (%u); at 10%% random loss "
		      "none before the 25 ms hold's length unheld (%u at 20 ms), one after (%u at "
		      "26 ms)",
		      short_held, short_during, short_end, tiny, spaced_early, spaced);
	}

	reordering_round(&s, &a, 3); /* 3 events in a round: no reordering path */
	held = hold_at(&s, &a, 5000, 2, 80);
	reordering_round(&s, &a, 256 + 60); /* 8-bit mark: 60 */
	a.srtt_us = 153900;		    /* 1.9 ms spread */
	early = hold_at(&s, &a, 6000, 2, 80);
	a.srtt_us = 177000;
	spline_on_rto(&s, 80);
	again = hold_at(&s, &a, 7000, 2, 80);
	CHECK(held == 120 && early == 120 && again == 120,
	      "repair hold: none without reordering (%u), under a 2 ms spread (%u), after an RTO "
	      "(%u)",
	      held, early, again);

	s.flags &= ~SPL_F_RTO_REGROW;
	held = hold_at(&s, &a, 65530, 1, 80); /* ends at (65530 + 50) mod 65536 = 44 */
	during = hold_at(&s, &a, 65560, 0, 75);
	end = hold_at(&s, &a, 65580, 0, 75);
	CHECK(held == 80 && during == 75 && end == 120,
	      "repair hold: the ms stamp wraps at 16 bits (held %u, %u across the wrap, released "
	      "%u)",
	      held, during, end);
	s.loss_ratio_q8 = 26; /* 10% random loss: half the hold */
	CHECK(spline_repair_hold_ms(&s, &a) == 25,
	      "repair hold: at 10%% random loss half the 50 ms span (%u ms)",
	      spline_repair_hold_ms(&s, &a));
	s.loss_ratio_q8 = 0;
	s.min_rtt_us = 20000;
	s.queue_rtt_us = 20000;
	a.srtt_us = 120000; /* spread 100 ms on a 20 ms path: at most min_rtt / 2 */
	CHECK(spline_repair_hold_ms(&s, &a) == 10, "repair hold: at most min_rtt / 2 (%u ms)",
	      spline_repair_hold_ms(&s, &a));
	s.min_rtt_us = 400000;
	s.queue_rtt_us = 400000;
	a.srtt_us = 600000;
	CHECK(spline_repair_hold_ms(&s, &a) == SPL_REPAIR_HOLD_MAX_MS,
	      "repair hold: at most 64 ms (%u ms)", spline_repair_hold_ms(&s, &a));
}

/* The holds' own pauses are not the path's rate (spline_unheld_bw): holds that take 30 of
 * a round's 100 ms make a sample over that round read the path as carrying 100 packets a
 * 100 ms; the estimate counts only the time not held (x 100 / 70). The filter keeps the sample
 * as sampled, so the correction ends with the first round without holds (a filter of
 * corrected samples kept it for 5-10 rounds); it is at most x 2, and none while a queue stands.
 */
static u32 bw_after_round(struct spline_state *s, struct spline_ack *a)
{
	s->bw_cur_bytes_per_sec = 0;
	s->bw_prev_bytes_per_sec = 0;
	spline_update_held(s, a, true);
	spline_update_bw(s, a, 1448, false);
	return spline_bw_bytes_per_sec(s);
}

static void check_held_time_not_path_rate(void)
{
	struct spline_state s;
	struct spline_ack a;
	u32 raw = 1448000, held_bw, after_bw, unheld_bw, capped_bw, queued_bw;
	u32 expect = (u32)((u64)raw * 100 / 70);

	spline_init_state(&s, 10, 5);
	s.mode = SPL_PROBE_BW;
	s.min_rtt_us = 90000;
	s.queue_rtt_us = 90000;
	s.loss_ratio_q8 = 26; /* 10% random loss: holds of half the 20 ms spread */
	memset(&a, 0, sizeof(a));
	a.srtt_us = 100000; /* spread 10 ms: holds of 20, halved at 10% loss */
	a.reord_seen_total = 1000;
	spline_update_reordering(&s, &a);
	reordering_round(&s, &a, 45);
	hold_at(&s, &a, 1000, 2, 80); /* 10 ms each, one every 20 ms: 30 ms held */
	hold_at(&s, &a, 1010, 0, 70);
	hold_at(&s, &a, 1020, 2, 80);
	hold_at(&s, &a, 1030, 0, 70);
	hold_at(&s, &a, 1040, 2, 80);
	a.rs_delivered_pkts = 100;
	a.rs_interval_us = 100000; /* 1448000 B/s as sampled */
	held_bw = bw_after_round(&s, &a);
	spline_update_held(&s, &a, true); /* a round without holds, no new sample */
	after_bw = spline_bw_bytes_per_sec(&s);
	unheld_bw = bw_after_round(&s, &a); /* a round without holds */
	s.round_held_ms = 500;		    /* more than the round: the cap */
	capped_bw = bw_after_round(&s, &a);
	s.round_held_ms = 30;
	s.queue_rtt_us = 130000; /* a standing queue of 40 ms: the bottleneck delivers on */
	queued_bw = bw_after_round(&s, &a);
	CHECK(held_bw >= expect - expect / 100 && held_bw <= expect + expect / 100 &&
		      after_bw == raw && unheld_bw == raw && capped_bw == 2 * raw &&
		      queued_bw == raw,
	      "holds' pauses are not the path's rate: 30 of 100 ms held reads %u B/s as %u (%u "
	      "expected); the round after, without holds, the filter's sample as sampled: %u; a "
	      "round without holds %u, at most x 2: %u; with a standing queue as sampled: %u",
	      raw, held_bw, expect, after_bw, unheld_bw, capped_bw, queued_bw);
}

/* The first epoch's end (spline_leave_start): START_PROBE hands over to a drain that
 * re-measures min_rtt, and the drain's smallest RTT becomes min_rtt, also when it is larger
 * than START's first samples (the path's delay at rate).
 */
static void check_start_ends_in_drain(void)
{
	struct spline_state s;
	struct spline_ack a;
	u8 mode_after_start, mode_after_drain;

	spline_init_state(&s, 10, 9);
	s.epoch_rounds_left = 1;
	s.min_rtt_us = 163000; /* START's first packets */
	s.bw_cur_bytes_per_sec = 1250000;
	memset(&a, 0, sizeof(a));
	a.mss_bytes = MSS_BYTES;
	a.in_flight_pkts = 280;
	spline_update_mode(&s, &a);
	mode_after_start = s.mode;
	a.rs_rtt_us = 231000; /* the drain's RTT samples */
	spline_update_min_rtt(&s, &a, 5000);
	a.rs_rtt_us = 209000;
	spline_update_min_rtt(&s, &a, 5100);
	a.in_flight_pkts = 140; /* <= the BDP (1.25 MB/s x 163 ms = 141 packets) */
	spline_update_mode(&s, &a);
	mode_after_drain = s.mode;
	CHECK(mode_after_start == SPL_DRAIN_PROBE && mode_after_drain == SPL_PROBE_RTT &&
		      s.min_rtt_us == 209000 && !(s.flags & SPL_F_MIN_RTT_PROBE),
	      "START's end drains (%s) and the drain's smallest RTT is min_rtt: %u us (209000 "
	      "expected, START's 163000), then %s",
	      mode_name(mode_after_start), s.min_rtt_us, mode_name(mode_after_drain));
}

static u32 window_with_loss_cnt(u8 loss_cnt)
{
	struct spline_state s;
	struct spline_ack a;

	spline_init_state(&s, 10, 7);
	s.mode = SPL_PROBE_BW;
	s.bw_cur_bytes_per_sec = 12500000; /* 100 Mbit/s */
	s.min_rtt_us = 100000;		   /* 100 ms: BDP 863 packets */
	s.stable_acks = 1000;
	s.curr_cwnd_pkts = 100;
	s.loss_cnt = loss_cnt;
	memset(&a, 0, sizeof(a));
	a.mss_bytes = MSS_BYTES;
	a.srtt_us = 100000;
	a.cwnd_pkts = 1000;
	a.in_flight_pkts = 863;
	spline_model_cwnd(&s, &a, MSS_BYTES);
	return s.curr_cwnd_pkts; /* the Spline window, before the BDP check */
}

static void check_loss_backoff(void)
{
	double w0 = window_with_loss_cnt(0), w9 = window_with_loss_cnt(9);
	double w10 = window_with_loss_cnt(10), w11 = window_with_loss_cnt(11);
	double w12 = window_with_loss_cnt(12), w200 = window_with_loss_cnt(200);

	CHECK(w9 == w0, "loss_cnt 9 does not back off (window %.0f = %.0f)", w9, w0);
	CHECK(fabs(w10 / w0 - 1000.0 / 1024) < 0.02 && fabs(w11 / w0 - 1331.0 / 2048) < 0.02 &&
		      fabs(w12 / w0 - 1728.0 / 4096) < 0.02,
	      "loss backoff x ls^3/2^ls: x%.3f at 10 (0.98), x%.3f at 11 (0.65), x%.3f at 12 "
	      "(0.42)",
	      w10 / w0, w11 / w0, w12 / w0);
	CHECK(w200 == w12, "loss backoff saturates at ls = 12 (loss_cnt 200: %.0f = %.0f)", w200,
	      w12);
}

static u8 decide(u16 stable, u16 unfair, u16 lost, u32 delivered, u8 loss_cnt)
{
	struct spline_state s;
	struct spline_ack a;

	spline_init_state(&s, 10, 3);
	s.mode = SPL_PROBE_BW;
	s.epoch_rounds_left = 1;
	s.stable_acks = stable;
	s.unfair_acks = unfair;
	s.epoch_lost_pkts = lost;
	s.epoch_delivered_pkts = delivered;
	s.loss_cnt = loss_cnt;
	memset(&a, 0, sizeof(a));
	a.mss_bytes = MSS_BYTES;
	spline_update_mode(&s, &a);
	return s.mode;
}

static void check_mode_table(void)
{
	u8 m;

	m = decide(100, 5, 10, 1000, 0);
	CHECK(m == SPL_PROBE_BW, "epoch end: tf = 0.5 x 100 / 15 = 3.3 >= 1 -> PROBE_BW (got %s)",
	      mode_name(m));
	m = decide(20, 5, 30, 1000, 0);
	CHECK(m == SPL_PROBE_RTT, "epoch end: tf = 0.5 x 20 / 35 < 1 -> PROBE_RTT (got %s)",
	      mode_name(m));
	m = decide(10, 20, 0, 1000, 0);
	CHECK(m == SPL_PROBE_RTT, "epoch end: unfair > stable, few losses -> PROBE_RTT (got %s)",
	      mode_name(m));
	m = decide(10, 20, 200, 1000, 0);
	CHECK(m == SPL_DRAIN_PROBE,
	      "epoch end: unfair > stable and 20%% losses -> DRAIN_PROBE (got %s)", mode_name(m));
	m = decide(10, 20, 0, 1000, 11);
	CHECK(m == SPL_DRAIN_PROBE,
	      "epoch end: unfair > stable and loss_cnt 11 -> DRAIN_PROBE (got %s)", mode_name(m));
	m = decide(0, 0, 0, 1000, 0);
	CHECK(m == SPL_PROBE_BW,
	      "epoch end: no stable, no unfair ACK, no loss (steady shared queue): "
	      "tf neutral -> PROBE_BW (got %s)",
	      mode_name(m));
	m = decide(0, 0, 5, 1000, 0);
	CHECK(m == SPL_PROBE_RTT,
	      "epoch end: no stable ACK and some losses: tf 0 -> PROBE_RTT (got %s)", mode_name(m));
}

/* ============================== scenario checks ============================== */

static void scenario_steady(void)
{
	struct flow *f = &F[0];
	double g;
	u32 i, distinct = 0, bad_len = 0, start_rounds = 0;

	link_init(20000000, 40, 100, 0.0, 0);
	g = single_flow(CCA_SPLINE, 5000000, 20000000, 11, "steady 20 Mbit/s 40 ms");
	CHECK(f->n_tr >= 2 && f->tr[0].mode == SPL_START_PROBE,
	      "steady: starts in START_PROBE and leaves it");
	for (i = 1; i < f->n_tr; i++)
		if (f->tr[i - 1].mode == SPL_START_PROBE) {
			start_rounds = f->tr[i].round;
			break;
		}
	CHECK(start_rounds >= SPL_FIRST_EPOCH_ROUNDS - 1 &&
		      start_rounds <= SPL_FIRST_EPOCH_ROUNDS + 1,
	      "steady: START_PROBE lasts the first epoch, 20 rounds (left after round %u)",
	      start_rounds);
	CHECK(g > 0.90 * 20, "steady: goodput %.2f Mbit/s > 90%% of 20 Mbit/s", g);
	CHECK(fabs(bw_est_mbps(f) - 20) < 2.0, "steady: bw estimate %.2f Mbit/s within 10%% of 20",
	      bw_est_mbps(f));
	CHECK(f->st.min_rtt_us >= 40000 && f->st.min_rtt_us < 41500,
	      "steady: min_rtt %u us = propagation 40 ms + one packet time", f->st.min_rtt_us);
	CHECK(f->cwnd >= bdp_pkts() && f->cwnd <= 3 * bdp_pkts() + 10,
	      "steady: cwnd %u within [BDP, 3 BDP] (BDP %u packets)", f->cwnd, bdp_pkts());
	CHECK(f->mode_acks[SPL_PROBE_BW] > 0, "steady: spends time in PROBE_BW");
	/* the probe-then-drain cycle: a lone flow keeps no standing queue (window-limited
	 * at 1.25 it kept its headroom, 12.75 ms here, at the median and the p95) */
	CHECK(queue_delay_pct_ms(f, 50) < 4.0 && queue_delay_pct_ms(f, 95) < 11.0,
	      "steady: a lone flow keeps no standing queue: queueing delay p50 %.2f ms < 4, "
	      "p95 %.2f ms < 11 (the probe's 0.25 BDP is 10 ms)",
	      queue_delay_pct_ms(f, 50), queue_delay_pct_ms(f, 95));
	CHECK(f->mode_acks[SPL_DRAIN_PROBE] * 20 < f->mode_acks[SPL_PROBE_BW],
	      "steady: DRAIN_PROBE only to re-measure min_rtt (%.1f%% of ACKs)",
	      100.0 * f->mode_acks[SPL_DRAIN_PROBE] /
		      (f->mode_acks[1] + f->mode_acks[2] + f->mode_acks[3]));
	for (i = 0; i <= SPL_EPOCH_MAX_ROUNDS + 1; i++) {
		if (f->epoch_lengths[i])
			distinct++;
		if (f->epoch_lengths[i] && (i < 1 || i > SPL_EPOCH_MAX_ROUNDS))
			bad_len++;
	}
	CHECK(distinct >= 5 && !bad_len,
	      "steady: epoch lengths are random within 1..31 rounds (%u distinct lengths seen)",
	      distinct);
}

static void scenario_random_loss(void)
{
	static const double loss[] = {0.01, 0.02, 0.05};
	unsigned int i;

	for (i = 0; i < sizeof(loss) / sizeof(loss[0]); i++) {
		char name[64];
		double gs, gr, retrans_pct;
		u32 halvings, min_cwnd, max_loss_cnt;

		link_init(20000000, 40, 100, loss[i], 0);
		snprintf(name, sizeof(name), "random loss %.0f%%", loss[i] * 100);
		gs = single_flow(CCA_SPLINE, 5000000, 30000000, 21 + i, name);
		retrans_pct = 100.0 * F[0].lost / F[0].sent;
		halvings = F[0].halvings_on_loss;
		min_cwnd = F[0].min_cwnd_after_start;
		max_loss_cnt = F[0].max_loss_cnt;
		link_init(20000000, 40, 100, loss[i], 0);
		gr = single_flow(CCA_RENO, 5000000, 30000000, 21 + i, name);

		CHECK(gs > 0.75 * 20, "%s: spline goodput %.2f Mbit/s > 75%% of the 20 Mbit/s link",
		      name, gs);
		CHECK(gs > 3.0 * gr, "%s: spline %.2f Mbit/s > 3 x the Reno reference %.2f Mbit/s",
		      name, gs, gr);
		CHECK(halvings == 0, "%s: loss alone never halves the window (%u halvings)", name,
		      halvings);
		CHECK(min_cwnd >= bdp_pkts() * 7 / 8,
		      "%s: window stays >= 7/8 BDP after START_PROBE (min %u, BDP %u)", name,
		      min_cwnd, bdp_pkts());
		CHECK(retrans_pct < loss[i] * 100 + 2.0,
		      "%s: retransmissions %.2f%% stay near the random loss rate (< %.0f%% + 2)",
		      name, retrans_pct, loss[i] * 100);
		if (loss[i] < 0.03)
			CHECK(max_loss_cnt <= SPL_LOSS_CNT_BACKOFF,
			      "%s: loss_cnt stays <= 9 (max %u): no loss backoff", name,
			      max_loss_cnt);
	}
}

static void scenario_heavy_loss(void)
{
	double g;

	/* 15% random loss with no standing queue is not congestion: the window
	 * must not back off (before the queue estimator it did, to 14.3 Mbit/s)
	 */
	link_init(20000000, 40, 100, 0.15, 0);
	g = single_flow(CCA_SPLINE, 5000000, 20000000, 31, "random loss 15%");
	CHECK(g > 0.80 * 20 * 0.85,
	      "random loss 15%%: goodput %.2f Mbit/s > 80%% of what the link delivers (17 Mbit/s)",
	      g);
}

static void scenario_jitter(void)
{
	double g;

	link_init(20000000, 40, 100, 0.0, 20);
	g = single_flow(CCA_SPLINE, 5000000, 30000000, 41, "jitter 40 ms + 0-20 ms");
	CHECK(F[0].max_loss_cnt <= SPL_LOSS_CNT_BACKOFF,
	      "jitter: no loss backoff (max loss_cnt %u)", F[0].max_loss_cnt);
	CHECK(g > 0.80 * 20, "jitter: goodput %.2f Mbit/s > 80%% of 20 Mbit/s", g);
}

/* Jitter that keeps order in front of the bottleneck (the VM's `jittery_inorder`: 10 Mbit/s,
 * 200 +-50 ms in order, 1% loss, 1-BDP buffer): a packet waits for the slowest one ahead of it,
 * so the RTT floor at rate sits ~50-80 ms above what START's first packets saw. Goodput over the
 * whole 20 s (as iperf3 counts it), 12 seeds, stretched ACKs, twice: as is, and with the
 * application pausing 0.3 s at 8 s, after which packets sent into the empty path see its bare
 * delay and lower min_rtt 60-80 ms under the floor at rate (the VM's collapsed run: min_rtt
 * 167-174 ms, RTT 228-245 ms).
 * The core before the drain at START's end read that delay as its own standing queue and sat in
 * PROBE_RTT until min_rtt expired: mean 6.67 Mbit/s, 3 seeds under 6 (worst 4.24). With the
 * drain: 7.91, worst 5.12, and with the pause 7.34, worst 4.62: a min_rtt under the floor made
 * the floor a standing queue above the band, the random losses congestive, the window 7/16 of
 * target + model, and the max filter followed the window down (seed 2 of START's quicker
 * variant: 10 -> 3 Mbit/s). With the floor at rate measured in START (item 25): 8.43, worst
 * 7.80; with the pause 8.34, worst 7.84.
 */
#define INORDER_SEEDS	    12
#define INORDER_PAUSE_AT_US 8000000ULL
#define INORDER_PAUSE_US    300000ULL
static bool g_inorder_pause;
static void hook_inorder_pause(u64 now)
{
	hook_mark(now);
	if (!g_inorder_pause)
		return;
	if (now == INORDER_PAUSE_AT_US)
		F[0].app_rate_bytes_per_sec = 1; /* nothing to send */
	if (now == INORDER_PAUSE_AT_US + INORDER_PAUSE_US) {
		F[0].app_rate_bytes_per_sec = 0; /* bulk again */
		F[0].app_limited_mark = 0;
	}
}

static void inorder_jitter_seeds(bool pause, double *mean, double *worst)
{
	double g, sum = 0;
	u32 seed;

	*worst = 1e9;
	g_inorder_pause = pause;
	for (seed = 1; seed <= INORDER_SEEDS; seed++) {
		char name[80];

		sim_rng = 0x853c49e6748fea9bULL ^ (seed * 0x9e3779b97f4a7c15ULL);
		link_init(10000000, 1, 100, 0.01, 0);
		L.order_delay_us = 150000;
		L.order_jitter_us = 100000;
		L.qcap_pkts = (u32)(L.rate_bytes_per_sec * 200000 / 1000000 / MSS_BYTES);
		L.ack_stretch_max_pkts = 4;
		snprintf(name, sizeof(name), "in-order jitter 200 +-50 ms, 1%%,%s seed %u",
			 pause ? " 0.3 s pause at 8 s," : "", seed);
		n_flows = 1;
		flow_init(&F[0], CCA_SPLINE, 0, seed);
		g_mark_at_us = 0;
		simulate(20000000, hook_inorder_pause);
		print_figures(name, &F[0], 20000000);
		g = goodput_mbps(&F[0], 20000000);
		sum += g;
		if (g < *worst)
			*worst = g;
	}
	*mean = sum / INORDER_SEEDS;
}

static void scenario_inorder_jitter(void)
{
	double mean, worst;

	inorder_jitter_seeds(false, &mean, &worst);
	CHECK(mean > 8.2 && worst > 7.0,
	      "in-order jitter: the floor at rate is no queue: goodput over 20 s mean %.2f > 8.2 "
	      "Mbit/s (of 10), worst seed %.2f > 7.0",
	      mean, worst);
	inorder_jitter_seeds(true, &mean, &worst);
	CHECK(mean > 8.2 && worst > 7.0,
	      "in-order jitter, min_rtt under the floor after a pause: no collapse: goodput over "
	      "20 s mean %.2f > 8.2 Mbit/s, worst seed %.2f > 7.0",
	      mean, worst);
}

static double g_bw_at[4];
static void hook_step(u64 now)
{
	if (now == 10000000) {
		L.rate_bytes_per_sec = 5000000 / 8;
	} /* 20 -> 5 */
	if (now == 13000000)
		g_bw_at[0] = bw_est_mbps(&F[0]);
	if (now == 13000000)
		g_bw_at[2] = L.q_len;
	if (now == 20000000) {
		L.rate_bytes_per_sec = 20000000 / 8;
	} /* 5 -> 20 */
	if (now == 24000000)
		g_bw_at[1] = bw_est_mbps(&F[0]);
	if (now == 26000000)
		mark_goodput(&F[0], now);
}

static void scenario_bw_step(void)
{
	link_init(20000000, 40, 100, 0.0, 0);
	n_flows = 1;
	flow_init(&F[0], CCA_SPLINE, 0, 51);
	simulate(30000000, hook_step);
	print_figures("bw step 20->5->20 Mbit/s", &F[0], 30000000);
	CHECK(g_bw_at[0] < 6.5, "bw step down 20->5 Mbit/s: estimate %.2f Mbit/s within 3 s",
	      g_bw_at[0]);
	CHECK(g_bw_at[2] < L.qcap_pkts,
	      "bw step down: queue %.0f packets below the buffer (%u) 3 s later", g_bw_at[2],
	      L.qcap_pkts);
	CHECK(g_bw_at[1] > 15.0, "bw step up 5->20 Mbit/s: estimate %.2f Mbit/s > 15 within 4 s",
	      g_bw_at[1]);
	CHECK(goodput_mbps(&F[0], 30000000) > 16.0,
	      "bw step up: goodput %.2f Mbit/s > 80%% of 20 in the last 4 s",
	      goodput_mbps(&F[0], 30000000));
}

static double g_app_bw_min = 1e9;
static void hook_app(u64 now)
{
	if (now == 5000000)
		F[0].app_rate_bytes_per_sec = 2000000 / 8.0; /* 2 Mbit/s */
	if (now > 6000000 && now <= 10000000 && bw_est_mbps(&F[0]) < g_app_bw_min)
		g_app_bw_min = bw_est_mbps(&F[0]);
	if (now == 10000000)
		F[0].app_rate_bytes_per_sec = 0; /* bulk again */
	if (now == 12000000)
		mark_goodput(&F[0], now);
}

static void scenario_app_limited(void)
{
	link_init(20000000, 40, 100, 0.0, 0);
	n_flows = 1;
	flow_init(&F[0], CCA_SPLINE, 0, 61);
	simulate(15000000, hook_app);
	print_figures("app-limited 5-10 s at 2 Mbit/s", &F[0], 15000000);
	CHECK(g_app_bw_min > 15.0,
	      "app-limited: bw estimate kept through 4 s at 2 Mbit/s (min %.2f Mbit/s)",
	      g_app_bw_min);
	CHECK(goodput_mbps(&F[0], 15000000) > 0.85 * 20,
	      "app-limited: back to %.2f Mbit/s (> 85%% of 20) within 2 s of bulk",
	      goodput_mbps(&F[0], 15000000));
}

static int g_trace;
static void hook_two(u64 now)
{
	int i;

	hook_mark(now);
	if (!g_trace || now % 1000000)
		return;
	for (i = 0; i < n_flows; i++)
		printf("    t=%.0fs flow %d: %s bw %.2f Mbit/s cwnd %u srtt %.1f ms queue %u us "
		       "loss_cnt %u stable %u unfair %u fair %u lost %u delivered %u\n",
		       now / 1e6, i + 1, mode_name(F[i].st.mode), bw_est_mbps(&F[i]), F[i].cwnd,
		       F[i].srtt_us / 1000.0, spline_queue_us(&F[i].st), F[i].st.loss_cnt,
		       F[i].st.stable_acks, F[i].st.unfair_acks, F[i].st.fairness_q8, F[i].lost,
		       F[i].delivered);
}

/* Two Spline flows on one 20 Mbit/s, 40 ms, 1-BDP path, the second starting
 * 1 s later, over SEEDS runs that differ in the random epoch lengths and the
 * simulator's randomness: who ends up with more is chaotic (one seed alone
 * passed or failed with any small change of the core), so the check is on the
 * mean and the worst Jain index over the seeds.
 */
#define TWO_FLOW_SEEDS 16
static void scenario_two_flows(void)
{
	double g0, g1, jain, jain_sum = 0, jain_min = 1, together_min = 1e9;
	u64 rng_base = sim_rng;
	u32 same = 0, i, k;

	for (k = 0; k < TWO_FLOW_SEEDS; k++) {
		link_init(20000000, 40, 100, 0.0, 0);
		sim_rng = rng_base + (u64)k * 7919;
		n_flows = 2;
		flow_init(&F[0], CCA_SPLINE, 0, 71 + 13 * k);
		flow_init(&F[1], CCA_SPLINE, 1000000, 72 + 17 * k);
		g_mark_at_us = 10000000;
		g_trace = k == 0 && getenv("SPLINE_CHECK_TRACE") != NULL;
		simulate(40000000, hook_two);
		if (k == 0) {
			print_figures("two flows, flow 1", &F[0], 40000000);
			print_figures("two flows, flow 2", &F[1], 40000000);
			for (i = 0; i < F[0].n_tr && i < F[1].n_tr; i++)
				if (F[0].tr[i].mode == F[1].tr[i].mode &&
				    llabs((long long)F[0].tr[i].t_us - (long long)F[1].tr[i].t_us) <
					    40000)
					same++;
		}
		g0 = goodput_mbps(&F[0], 40000000);
		g1 = goodput_mbps(&F[1], 40000000);
		jain = (g0 + g1) * (g0 + g1) / (2 * (g0 * g0 + g1 * g1));
		printf("  [two flows, seed %u] %.2f + %.2f Mbit/s, Jain %.3f\n", k, g0, g1, jain);
		jain_sum += jain;
		if (jain < jain_min)
			jain_min = jain;
		if (g0 + g1 < together_min)
			together_min = g0 + g1;
	}
	CHECK(together_min > 0.90 * 20,
	      "two flows: together >= %.2f Mbit/s > 90%% of 20 in every seed", together_min);
	/* the original design: mean 0.81, worst 0.54 (8 seeds); with the window
	 * on the jitter and not the queue 0.92 and 0.81; with a foreign queue
	 * counted in the model RTT (this core, 16 seeds) 0.98 and 0.93.
	 */
	CHECK(jain_sum / TWO_FLOW_SEEDS > 0.95 && jain_min > 0.85,
	      "two flows: Jain fairness mean %.3f > 0.95, worst %.3f > 0.85 over %d seeds",
	      jain_sum / TWO_FLOW_SEEDS, jain_min, TWO_FLOW_SEEDS);
	CHECK(same < 5, "two flows: they do not probe in lock step (%u simultaneous transitions)",
	      same);
}

/* Spline and a loss-based flow (Reno, or CUBIC, which after a loss keeps 0.7 of the
 * window that filled the buffer and so a standing queue) on one 20 Mbit/s, 40 ms, 1-BDP
 * path, both from the start, TWO_FLOW_SEEDS seeds: Spline's share of what they deliver
 * together. ack_stretch_max_pkts > 1: the receiver's ACKs cover uneven numbers of
 * packets, as delayed ACKs and GRO make them.
 */
static double spline_share_against(enum cca other, u64 rate_bps, u32 jitter_ms,
				   u32 ack_stretch_max_pkts, const char *name, double *share_min,
				   double *share_max)
{
	double g0, g1, share, share_sum = 0;
	u64 rng_base = sim_rng;
	u32 k;

	*share_min = 1;
	*share_max = 0;
	for (k = 0; k < TWO_FLOW_SEEDS; k++) {
		link_init(rate_bps, 40, 100, 0.0, jitter_ms);
		L.ack_stretch_max_pkts = ack_stretch_max_pkts;
		sim_rng = rng_base + (u64)k * 104729;
		n_flows = 2;
		flow_init(&F[0], CCA_SPLINE, 0, 91 + 13 * k);
		flow_init(&F[1], other, 0, 0);
		g_mark_at_us = 10000000;
		g_trace = getenv("SPLINE_CHECK_TRACE") &&
			  (u32)atoi(getenv("SPLINE_CHECK_TRACE")) == k;
		simulate(40000000, hook_two);
		if (k == 0) {
			char label[64];

			snprintf(label, sizeof(label), "%s, spline", name);
			print_figures(label, &F[0], 40000000);
			snprintf(label, sizeof(label), "%s, %s", name, cca_name(other));
			print_figures(label, &F[1], 40000000);
		}
		g0 = goodput_mbps(&F[0], 40000000);
		g1 = goodput_mbps(&F[1], 40000000);
		share = g0 / (g0 + g1);
		printf("  [%s, seed %u] spline %.2f + %s %.2f Mbit/s, spline's share %.2f\n", name,
		       k, g0, cca_name(other), g1, share);
		share_sum += share;
		if (share < *share_min)
			*share_min = share;
		if (share > *share_max)
			*share_max = share;
	}
	return share_sum / TWO_FLOW_SEEDS;
}

static void scenario_vs_reno(void)
{
	double mean, lo, hi;

	mean = spline_share_against(CCA_RENO, 20000000, 0, 1, "vs reno", &lo, &hi);
	/* Before the foreign-queue rule Spline yielded: share 0.23 (0.16..0.28),
	 * its window on min_rtt while the Reno flow kept the buffer full.
	 */
	CHECK(mean > 0.35 && mean < 0.65,
	      "spline vs reno: Spline's share mean %.3f within 0.35..0.65 (seeds %.3f..%.3f)", mean,
	      lo, hi);
}

/* Spline and CUBIC through one 40 ms, 1-BDP path, the receiver's ACKs stretched (1..8
 * packets each), twice: at 20 Mbit/s, where CUBIC keeps the buffer full, and at
 * 10 Mbit/s with 0-20 ms of delay noise on every packet (no reordering), as a busy
 * TCG guest delays its packets: the queue a small flow reads from its few RTT samples
 * per round then sits between the band and twice it, CUBIC's and the noise's, and
 * before PROBE_RTT kept the additive quantum and the window stopped being scaled by
 * the stability score Spline fell to 4 packets in 4 of 16 seeds (share 0.39, seeds
 * 0.09..0.80; the VM, stop 20: 0.14..0.50).
 */
static void scenario_vs_cubic(void)
{
	double mean, lo, hi;

	mean = spline_share_against(CCA_CUBIC, 20000000, 0, 8, "vs cubic, stretched ACKs", &lo,
				    &hi);
	CHECK(mean > 0.40 && mean < 0.65 && lo > 0.30,
	      "spline vs cubic, stretched ACKs: Spline's share mean %.3f within 0.40..0.65, "
	      "worst seed %.3f > 0.30",
	      mean, lo);
	mean = spline_share_against(CCA_CUBIC, 10000000, 20, 8,
				    "vs cubic, 0-20 ms delay noise, stretched ACKs", &lo, &hi);
	CHECK(mean > 0.45 && mean < 0.65 && lo > 0.30,
	      "spline vs cubic, 0-20 ms delay noise, stretched ACKs: Spline's share mean %.3f "
	      "within 0.45..0.65, worst seed %.3f > 0.30 (none starves)",
	      mean, lo);
}

/* A clean 10 Mbit/s, 40 ms, 1-BDP path in a guest that stalls (struct link), as the VM
 * harness's TCG guest does on a busy host: every 20 ms on average nothing moves for
 * 0-10 ms (a fifth of the time), ACKs stretched 1..8 packets. SPLINE_CHECK_STALL=
 * "gap_ms,max_ms" changes the stalls (0,0: none) to compare. Spline's queue there:
 * p50 22 ms, p95 51 ms (19.25 and 21.25 without stalls); its window 1.47 BDP.
 */
static void scenario_guest_stalls(void)
{
	const char *env = getenv("SPLINE_CHECK_STALL");
	u32 gap_ms = 20, max_ms = 10;
	u64 end_us = 30000000, warm_us = 5000000;
	double g, carried, lost_pct;

	if (env && sscanf(env, "%u,%u", &gap_ms, &max_ms) != 2)
		gap_ms = 20, max_ms = 10;
	link_init(10000000, 40, 100, 0.0, 0);
	L.stall_gap_mean_us = gap_ms * 1000ULL;
	L.stall_max_us = max_ms * 1000ULL;
	L.ack_stretch_max_pkts = 8;
	g = single_flow(CCA_SPLINE, warm_us, end_us, 51, "guest stalls, clean 10 Mbit/s");
	/* what the link can carry outside the stalls, Mbit/s */
	carried = 10.0 * (1.0 - (double)L.stalled_us / (double)(end_us - warm_us));
	lost_pct = F[0].sent ? 100.0 * F[0].lost / F[0].sent : 0;
	printf("  [guest stalls] stalled %.1f%% of the time, window mean %.1f pkts (BDP %u)\n",
	       100.0 * L.stalled_us / (end_us - warm_us),
	       F[0].cwnd_acks ? (double)F[0].cwnd_sum_pkts / F[0].cwnd_acks : 0.0, bdp_pkts());
	CHECK(g > 0.85 * carried && lost_pct < 3.0,
	      "guest stalls: goodput %.2f Mbit/s > 85%% of the %.2f the link carries outside "
	      "stalls, %.2f%% of the packets lost < 3%%",
	      g, carried, lost_pct);
}

static void scenario_policer(void)
{
	link_init(20000000, 40, 100, 0.0, 0);
	L.police_bytes_per_sec = 5000000 / 8;
	L.police_burst_bytes = 30000;
	L.police_tokens = 30000;
	single_flow(CCA_SPLINE, 5000000, 20000000, 81, "policer 5 Mbit/s on 20 Mbit/s");
	CHECK(F[0].lt_use_acks > 0 && F[0].max_lt_bw_bytes_per_sec * 8 < 6000000,
	      "policer: long-term sampler finds the policed rate (paced at up to %.2f Mbit/s for "
	      "%u ACKs)",
	      F[0].max_lt_bw_bytes_per_sec * 8 / 1e6, F[0].lt_use_acks);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	check_state_size();
	check_overflow();
	check_probe_bw_cycle();
	check_no_div_zero();
	check_loss_backoff();
	check_repair_hold();
	check_held_time_not_path_rate();
	check_start_ends_in_drain();
	check_mode_table();
	scenario_steady();
	scenario_random_loss();
	scenario_heavy_loss();
	scenario_jitter();
	scenario_bw_step();
	scenario_app_limited();
	scenario_two_flows();
	scenario_vs_reno();
	scenario_vs_cubic();
	scenario_policer();
	scenario_guest_stalls();
	scenario_inorder_jitter(); /* last: it reseeds the path's random stream per seed */
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
