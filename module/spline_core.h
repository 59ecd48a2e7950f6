/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spline_core.h - the Spline congestion control model, kernel-independent.
 *
 * This one file is the algorithm.  It is included, unchanged, by
 *   - tcp_spline.c    (the loadable kernel module),
 *   - spline.bpf.c    (the eBPF struct_ops build of the same algorithm),
 *   - check/spline_check.c (the userspace simulator that checks it).
 * The includer provides the integer types u8, u16, u32, u64, s32, s64 and
 * bool, and may define SPL_DIV_U64(n, d) (the kernel maps it to div64_u64 so
 * that 32-bit builds link).  Nothing here touches a socket: each ACK the
 * caller fills a struct spline_ack snapshot from the socket and the rate
 * sample, calls spline_on_ack(), and writes the returned window (packets)
 * and pacing rate (bytes per second) back.
 *
 * Arithmetic is integer fixed point only: gains and ratios are Q8 (256 means
 * 1.0, SPL_UNIT), bandwidth is bytes per second in a u32 (up to 34 Gbit/s),
 * times are microseconds (RTT) or milliseconds (filter stamps), windows are
 * packets.  The largest product, bandwidth x RTT, is a u32 x u32 and always
 * fits a u64; it is divided by 10^6 before any gain is applied, so 10 Gbit/s
 * x 1 s RTT x 2.15 stays far below 2^64.  Every division checks its divisor.
 * There are no loops, so the BPF verifier accepts it as straight-line code.
 *
 * The model in formulas (per connection, per ACK):
 *
 *   bw       = windowed max over ~5-10 rounds of delivered*mss/interval
 *   min_rtt  = min RTT sample, expiring after 10 s and at START's end
 *              (re-measured in a drain)
 *   rtt_m    = min_rtt + min(min((srtt - last round's min RTT)/2, 32 ms)
 *                            + another flow's standing queue (0 if none),
 *                            min_rtt)
 *   cwnd     = max(1.0 * bw * min_rtt,                    (the BDP target)
 *                  1.25 * bw * rtt_m * fairness * backoff(loss_cnt)
 *                                    + acked [+ 4 in PROBE_BW and PROBE_RTT])
 *   pacing   = pacing_gain(mode) * bw * 0.99
 *
 * where tf = (0.75 * stable) / (1.5 * (recent_losses + unfair)) is the
 * stability score of the current epoch.  The mode (and so the gains) is
 * chosen at the end of each epoch, a run of 1..31 ACK rounds whose length is
 * random so that competing Spline flows do not probe in lock step:
 *
 *        +-------------+   first epoch (20 rounds) ends: DRAIN_PROBE,
 *        | START_PROBE | -----------------------------+  re-measuring min_rtt
 *        +-------------+                              |
 *                                                     v
 *                         tf >= 1 and unfair <= stable
 *        +-----------+  <---------------------------  +-----------+
 *        | PROBE_BW  |                                | PROBE_RTT |
 *        | pace 2.15 |  --------------------------->  | pace 0.98 |
 *        +-----------+  tf < 1 or unfair > stable     +-----------+
 *              |                                       ^     |
 *              | unfair > stable and losses high       |     |
 *              v                                       |     |
 *        +-------------+  queue drained (in flight     |     |
 *        | DRAIN_PROBE | ------ <= BDP) early ---------+     |
 *        | pace 0.39   | <-----------------------------------+
 *        +-------------+   unfair > stable and losses high
 *
 * Loss alone never halves the window: losses only raise loss_cnt when a
 * round loses more than 1 packet in 10, and the window backs off smoothly
 * (x0.98, x0.65, x0.42) only once loss_cnt passes 9, i.e. after at least ten
 * heavy-loss rounds more than light ones.  Random loss of a few percent
 * therefore costs only the lost packets themselves.
 */
#ifndef SPLINE_CORE_H
#define SPLINE_CORE_H

#ifndef SPL_DIV_U64
#define SPL_DIV_U64(n, d) ((n) / (d))
#endif

/* --- Units and fixed point ------------------------------------------------ */

/* Gains and ratios are Q8: 256 means 1.0. */
#define SPL_UNIT_SHIFT	  8
#define SPL_UNIT	  (1U << SPL_UNIT_SHIFT)
#define SPL_USEC_PER_SEC  1000000ULL
#define SPL_USEC_PER_MSEC 1000ULL
#define SPL_MSEC_PER_SEC  1000ULL
/* Largest bandwidth a u32 holds, bytes/s (34 Gbit/s). */
#define SPL_BW_MAX_BYTES_PER_SEC 0xffffffffULL
/* Rate samples never cover more packets than this (2^22 = 4M packets, i.e.
 * more than 10 Gbit/s x 4 s of 1500-byte packets); the clamp keeps
 * delivered * mss * 10^6 below 2^64.
 */
#define SPL_MAX_SAMPLE_PKTS (1U << 22)

/* --- Modes ------------------------------------------------------------------ */
enum spline_mode {
	SPL_START_PROBE = 0, /* window grows a fixed step per ACK */
	SPL_PROBE_BW = 1,    /* pace above the estimate to find more bw */
	SPL_PROBE_RTT = 2,   /* pace just under it to drain the queue */
	SPL_DRAIN_PROBE = 3, /* pace well under it: loss and delay both high */
};

/* --- Epochs ----------------------------------------------------------------- */
/* First epoch (START_PROBE), in ACK rounds: long enough for the step growth
 * to reach the BDP of a 10 Gbit/s x 200 ms path from 10 packets.
 */
#define SPL_FIRST_EPOCH_ROUNDS 20
/* Later epochs last 1..SPL_EPOCH_MAX_ROUNDS rounds, drawn at random. */
#define SPL_EPOCH_MAX_ROUNDS 31

/* --- Gains (Q8) ------------------------------------------------------------- */
/* START_PROBE: window grows by this many packets per ACK (about x1.5-x2 per
 * round with delayed ACKs), paced at 1.0 x window / min_rtt.
 */
#define SPL_START_STEP_PKTS   1
#define SPL_START_PACING_GAIN SPL_UNIT /* 1.0 */
/* PROBE_BW pacing gain 2.15 (550/256 = 2.148): the design's "about 2.15".
 * Paced that fast the flow is window-limited, so the window, not the pacing
 * rate, sets the queue it builds: in flight = window.
 */
#define SPL_PROBE_BW_PACING_GAIN 550
/* Model window gain in PROBE_BW and PROBE_RTT ("same model"): 1.25 x bw x
 * rtt_m, i.e. at most a quarter BDP of queue (plus the RTT tolerance) while
 * probing. The design's table gives no window gain; reusing the 2.15 pacing
 * gain made the window 2.4 BDP and, in the simulator, overflowed a one-BDP
 * buffer every round (9% retransmissions on a loss-free path).
 */
#define SPL_MODEL_CWND_GAIN 320
/* START_PROBE's window cap is bw x (min_rtt + the path's floor at rate):
 * 2 x bw x min_rtt where the floor does not rise with the rate. Below the BDP,
 * delivery tracks the window and the cap (two rounds of growth) never binds;
 * once the pipe is full it stops the step growth at one BDP of queue above
 * the floor (spline_start_cwnd).
 */
/* PROBE_BW pacing gain once the pipe is full (in flight >= bw x min_rtt): 1.25,
 * the window's own gain (stop 23). Paced at 2.15, a window-limited flow sends
 * whatever room an ACK opens at twice the bottleneck rate: after every gap in
 * the ACK clock (a guest stall, an aggregated or compressed ACK train) the
 * window's headroom went out as a burst that overflowed a 1-BDP buffer (VM,
 * clean 10 Mbit/s, 40 ms: tbf drops 189-374 a run against BBR's 8-141). Past
 * the BDP, pacing faster than the window gain only builds the queue faster:
 * the window-limited steady state is the same. Simulator, 10 Mbit/s with guest
 * stalls: packets lost 1.32% -> 0.64%; 20 Mbit/s at 15% random loss 17.21 ->
 * 16.77 Mbit/s, its queue p95 23.25 -> 6.75 ms; shares (Reno 0.536 -> 0.495,
 * CUBIC 0.589 -> 0.569, with delay noise 0.582 -> 0.537) and two flows' Jain
 * (0.998 -> 0.994, worst 0.994 -> 0.971) held.
 */
#define SPL_PROBE_BW_FULL_PACING_GAIN SPL_MODEL_CWND_GAIN
/* PROBE_BW pacing once the pipe is full on a path Spline has to itself (the
 * last round's queue not above twice the band, the mark item 15 counts for a
 * buffer-filling flow; loss under the random-loss allowance's 8%, item 7):
 * a probe-then-drain cycle over the bandwidth filter's 5-round half-window
 * (stop 24): its first round 1.25 (probe: a delivery sample above the
 * estimate, if the path has it, raises the max filter), its second 0.75
 * (drain what the probe queued), the other three 1.0 (cruise: arrivals equal
 * the bottleneck's departures, the queue stays where the drain left it). The
 * window (1.25 x the model + 4 packets) stays the limit behind the pacing, so
 * the sharing rules that act through it are unchanged. Window-limited at 1.25
 * a lone flow kept the window's headroom, 0.25 BDP + 4 packets, standing in
 * the buffer: queueing delay p50 and p95 12.75 ms at 20 Mbit/s (simulator),
 * median RTT 58 ms on 40 ms against BBR's 48-49 (VM, clean 10 Mbit/s). With a
 * queue above twice the band the window-limited 1.25 stays: pacing at its own
 * estimate beside a buffer-filling flow lets the estimate, hence the share,
 * sink. Waiting for item 15's 12 rounds did: simulator, Spline and CUBIC over
 * their first 20 s, share 0.368 (0.397 with START's drain, item 22) where one
 * round gives 0.391 (0.510 and 0.519 with delay noise over 10-40 s); VM, 20 s
 * runs, 0.37 +- 0.08 with item 22.
 * At 8% random loss or more the cruise at 1.0 delivers (1 - loss) of the
 * estimate and the max filter spirals down (simulator, 15% loss: 16.77 ->
 * 10.60 Mbit/s): there too the 1.25 stays (its queue there is small anyway).
 * Below 8%, while no queue stands (the loss is random, item 7), the cycle's
 * gains are divided by (1 - the last interval's loss ratio): random loss on
 * the way to the bottleneck (a lossy link before it; netem before tbf in the
 * VM) leaves (1 - loss) of a cruise at 1.0 arriving there, and the link idles
 * by that share (BBR's cruise does). With a queue standing the losses are the
 * buffer's and nothing is added.
 */
#define SPL_CYCLE_PROBE_GAIN SPL_MODEL_CWND_GAIN
#define SPL_CYCLE_DRAIN_GAIN 192 /* 0.75 */
/* PROBE_RTT pacing gain 0.98 (251/256): just under the estimate. */
#define SPL_PROBE_RTT_PACING_GAIN 251
/* DRAIN_PROBE pacing gain 0.39 (100/256) and window gain 0.34 (87/256). */
#define SPL_DRAIN_PACING_GAIN 100
#define SPL_DRAIN_CWND_GAIN   87
/* Every pacing rate is multiplied by 0.99 (253/256) so that the flow never
 * paces exactly at the bottleneck rate and a queue cannot build from pacing
 * rounding alone.
 */
#define SPL_PACING_MARGIN 253
/* BDP target gain 1.0: the window never falls below one BDP (unless the
 * design's two low-stability cases apply), so random loss cannot starve the
 * pipe. BBR uses 2.0 here, but BBR paces at 1.0 most of the time; Spline in
 * PROBE_BW paces at 2.15 and would fill a 2-BDP window completely.
 */
#define SPL_TARGET_CWND_GAIN SPL_UNIT

/* --- Filters ---------------------------------------------------------------- */
/* bw max filter: two half-windows of this many rounds each (window 5-10). */
#define SPL_BW_HALF_WIN_ROUNDS 5
/* min_rtt expires after this many ms and the next sample replaces it. */
#define SPL_MIN_RTT_WIN_MS 10000U
/* probe_min_rtt_us before a re-measuring drain has its first sample */
#define SPL_PROBE_MIN_RTT_NONE 0xffffffffU

/* --- Queue ------------------------------------------------------------------------ */
/* The smallest queue that counts as congestion, us (see spline_queue_band_us). */
#define SPL_QUEUE_BAND_MIN_US 4000U
/* The model window's share of the smoothed RTT's excess over min_rtt is
 * capped at this (a standing queue does not grow the window without bound).
 */
#define SPL_MODEL_EXTRA_RTT_MAX_US 32000U

/* The RTT floor that rises with the rate (item 25, stop 26). On a path whose
 * delay grows with the send rate (jitter that keeps order: each packet waits
 * for the slowest one ahead of it; VM, 10 Mbit/s, 200 +-50 ms: round minimum
 * 163-175 ms for START's first packets, 228-245 ms at the link's rate) the
 * floor at rate is not a queue: no drain empties it, and a window made of
 * min_rtt cannot carry the rate. It is measured where it cannot be the flow's
 * own queue: in START_PROBE rounds whose delivery still grew by a quarter
 * (the pipe not full), the round's smallest RTT above min_rtt. Later rounds
 * at the flow's rate (in flight at least bw x that floor, outside START and
 * the drain) lower it when their floor is lower: a buffer-filling flow's
 * queue that START took for the path's (CUBIC's sawtooth) leaves it at
 * CUBIC's next backoff (without this, Spline's share against CUBIC rose to
 * 0.688 in the simulator). The floor is then min_rtt + this: what the
 * standing queue (the band, congestion, the foreign queue), the model RTT and
 * START's cap are read against. At most half of min_rtt above it: a bound on
 * what a competitor's queue, or the flow's own in START's last growing round,
 * can put into it.
 */
#define SPL_RATE_FLOOR_MAX_SHIFT 1U   /* at most min_rtt >> 1 above min_rtt */
#define SPL_RATE_FLOOR_MS_MAX	 255U /* u8, ms */
#define SPL_START_GROWTH_NUM	 5U   /* a round grew: bw x 4 >= previous x 5 */
#define SPL_START_GROWTH_DEN	 4U

/* A queue that has stood this many rounds in a row is not the flow's own:
 * Spline keeps at most the band queued and drains below it within an epoch
 * (PROBE_RTT paces under the estimate), so a queue that outlasts that is
 * held by a flow that fills buffers (CUBIC, Reno). The model RTT then
 * counts it, as every flow sharing the queue does.
 */
#define SPL_FOREIGN_QUEUE_ROUNDS 12U

/* --- Fairness ratio (Q8) ------------------------------------------------------ */
#define SPL_FAIR_MIN 253 /* 0.99 */
#define SPL_FAIR_MAX 335 /* 1.31 */
/* "Many unfair ACKs": unfair * 4 > stable. */
#define SPL_UNFAIR_MANY_MULT 4U

/* --- Delivery steadiness ------------------------------------------------------- */
/* Delivery is steady when this ACK delivered something and at least 1/4 of
 * what the previous ACK delivered (stretch ACKs vary by a factor of a few).
 */
#define SPL_DELIVERY_DROP_DIV 4U

/* --- Loss ----------------------------------------------------------------------- */
/* A round is lossy when lost * 10 > delivered, i.e. it lost more than 10%.
 * Random loss of 1-5% therefore does not raise loss_cnt.
 */
#define SPL_LOSS_HIGH_DIV 10U
/* The loss rate is sampled over at least one round and at least this many
 * delivered packets: with a window of 8 packets one loss would be "12%", and
 * in the simulator the smaller of two flows kept reading its random losses
 * as heavy rounds, narrowed its band and starved.
 */
#define SPL_LOSS_SAMPLE_MIN_PKTS 32U
#define SPL_LOSS_CNT_MAX	 255U
/* Random-loss allowance: while the path is not congested the model window
 * is divided by (1 - loss ratio of the last sampling interval), the ratio
 * capped at 64/256 = 25% (x1.33 at most). A window-limited flow's delivery
 * rate is (1 - loss) x window / RTT: at 10% loss and 20 ms of jitter on a
 * 90 ms path that cancelled the 1.25 window gain, the estimate stopped
 * growing and the window sat at a third of the BDP (VM: 4.3 of 20 Mbit/s).
 */
#define SPL_LOSS_ALLOW_MAX_Q8 64U
/* ... and only from 20/256 = 8% loss on: below it the 1.25 gain outgrows the
 * loss anyway, and a sampling interval of 32 packets with one or two losses
 * (3-6%) says little: with the allowance from 3% on, two simulated flows
 * sharing a queue (1% of their packets lost) settled at 16 / 4 Mbit/s.
 */
#define SPL_LOSS_ALLOW_MIN_Q8	 20U
#define SPL_LOSS_CNT_BACKOFF	 9U  /* backoff above this */
#define SPL_LOSS_CNT_BACKOFF_CAP 12U /* ls = min(loss_cnt, 12) */
#define SPL_LOSS_CNT_FAIR	 10U /* lossy phase above this */
#define SPL_LOSS_CNT_ALONE	 50U /* Spline window alone above this */

/* --- Stability score tf (Q8) ------------------------------------------------------ */
#define SPL_TF_PROBE_RTT 256U	 /* tf < 1.0: PROBE_RTT */
#define SPL_TF_HIGH	 512U	 /* tf >= 2.0 lowers loss_cnt per round */
#define SPL_TF_VERY_LOW	 64U	 /* tf < 0.25: "very low" */
#define SPL_TF_MAX	 4096U	 /* tf saturates at 16.0 */
#define SPL_COUNTER_MAX	 0xffffU /* u16 saturating counters */

/* --- Fair sharing ---------------------------------------------------------------------- */
/* In PROBE_BW and PROBE_RTT the window gets this many packets on top of the
 * multiplicative model. A window that is only gain x own-estimate x RTT is
 * share-neutral: any split of the link between two Spline flows reproduces
 * itself, and in the simulator a flow that lost its share once never got it
 * back. A fixed additive term is worth more to the smaller flow, so the only
 * equilibrium is the equal split (the reason AIMD converges); 4 packets also
 * covers a TSO burst, like BBR's quantization budget. PROBE_RTT keeps it: it
 * drains by pacing (0.98), and without the term a flow beside a queue it did
 * not build lost delivery, hence estimate, hence window every round it spent
 * there (simulator, beside CUBIC with 0-20 ms of delay noise: 4 packets; VM:
 * 4-5 packets beside CUBIC for 16 s). Only DRAIN_PROBE goes without it.
 */
#define SPL_PROBE_BW_QUANTUM_PKTS 4U

/* --- Window bounds ------------------------------------------------------------------ */
#define SPL_MIN_CWND_PKTS 4U /* never below 4 packets (fast retransmit) */

/* --- Long-term (policer) bandwidth sampler ---------------------------------------- */
#define SPL_LT_MIN_ROUNDS 4U  /* shortest sampling interval, rounds */
#define SPL_LT_MAX_ROUNDS 16U /* longest sampling interval, rounds */
#define SPL_LT_LOSS_DIV                                                                            \
	8U				 /* interval counts when lost*8 >= delivered (12.5%):      \
					  * at BBR's 20% Spline, which probes by window not        \
					  * by pacing, lost 16-19% to a policer and missed it */
#define SPL_LT_BW_REL_DIV	    8U	 /* two intervals agree within 1/8 ... */
#define SPL_LT_BW_ABS_BYTES_PER_SEC 500U /* ... or within 4 kbit/s */
#define SPL_LT_USE_ROUNDS	    48U	 /* then pace at the policed rate this long */

/* --- State flags ------------------------------------------------------------------- */
#define SPL_F_RTO_REGROW    0x01 /* after an RTO: regrow from in flight */
#define SPL_F_IDLE_RESTART  0x02 /* restarting after idle: pace at 1.0 */
#define SPL_F_LT_STARTED    0x04 /* lt sampling interval open */
#define SPL_F_MIN_RTT_PROBE 0x20 /* min_rtt expired or START ended: re-measuring in a drain */
#define SPL_F_QUEUE_RISING                                                                         \
	0x40 /* the last round's minimum RTT rose by more                                          \
	      * than half the band over the round before */

/* the last round saw the path reorder (see below) */
#define SPL_F_REORDERING 0x08
/* holding transmissions until repair_hold_end_ms */
#define SPL_F_REPAIR_HOLD 0x10
/* START_PROBE: the last round's delivery rate grew by a quarter or more over
 * the round before (the pipe is not full yet: no queue of the flow's own)
 */
#define SPL_F_START_GROWING 0x80

/* --- Repairs held past the reordering span (stop 22) ------------------------------------
 * A path that reorders (netem jitter, as Mininet builds it) makes a repair
 * that fills the receiver's next expected byte set its ts_recent to the
 * repair's newer TSval; originals sent before the repair that arrive after it
 * carry older TSvals and the receiver discards them by PAWS, so they need
 * repairs too, whose own arrival discards more (VM, 200 +-50 ms: 1164-1185
 * PAWS discards for 107-142 router drops a run). An original sent at least
 * the reordering span before the repair arrives before it. The kernel sends
 * marked-lost segments first, limited by cwnd (tcp_xmit_retransmit_queue),
 * right after cong_control; so when an ACK marks losses on a reordering
 * path the window is held at what is in flight for a hold of the jitter's
 * span (twice the smoothed RTT above the round's smallest sample, which is
 * half the span for a uniform jitter), then the repairs go first. With a
 * uniform jitter of width W at rate r, originals discarded per repair:
 * r x (W - hold)^3 / (6 W^2): at hold W/2 one eighth of what they are
 * without it, at hold W none.
 */
#define SPL_REORDER_ROUND_EVENTS                                                                   \
	8U /* reordering events (tp->reord_seen) in a round that make it a reordering path:        \
	    * VM, 200 +-50 ms ~60 a round, 90 +-20 ms ~45; no jitter 0-1 (TCG's vCPUs) */
/* ms: a shorter spread is no reordering span (and no shorter hold after the last one) */
#define SPL_REPAIR_HOLD_MIN_MS 2U
#define SPL_REPAIR_HOLD_MAX_MS 64U /* ms, longest hold (and at most min_rtt / 2) */
/* A round's held time as a share of it, Q8: at most one half, as a hold
 * never outlasts the time unheld since the last one ended. */
#define SPL_HELD_MAX_Q8 (SPL_UNIT / 2)

/* Per-connection state: must fit ICSK_CA_PRIV_SIZE (104 bytes on 6.x). */
struct spline_state {
	u32 bw_cur_bytes_per_sec;      /* max bw sample, current half-window */
	u32 bw_prev_bytes_per_sec;     /* max bw sample, previous half-window */
	u32 lt_bw_bytes_per_sec;       /* long-term (policed) bw estimate */
	u32 min_rtt_us;		       /* 0 until the first RTT sample */
	u32 min_rtt_stamp_ms;	       /* when min_rtt was taken */
	u32 round_min_rtt_us;	       /* smallest RTT sample this round, 0: none yet */
	u32 queue_rtt_us;	       /* smallest RTT sample of the last round that
					* had one: min_rtt + standing queue, jitter
					* filtered out (0 until the first round) */
	u32 curr_ack_pkts;	       /* packets newly delivered by this ACK */
	u32 last_ack_pkts;	       /* ... by the previous ACK */
	u32 next_round_delivered_pkts; /* round ends when this is delivered */
	u32 round_delivered_pkts;      /* delivered in the current round */
	u32 epoch_delivered_pkts;      /* delivered in the current epoch */
	u32 curr_cwnd_pkts;	       /* the Spline window (before BDP check) */
	u32 prior_cwnd_pkts;	       /* window before loss recovery, for undo */
	u32 rng_state;		       /* xorshift32 state, never 0 */
	u32 lt_start_delivered_pkts;   /* lt interval start: tp->delivered */
	u32 lt_start_lost_pkts;	       /* lt interval start: tp->lost */
	u32 lt_start_ms;	       /* lt interval start time */
	u32 probe_min_rtt_us;	       /* min RTT seen while re-measuring */
	u16 stable_acks;	       /* stable ACKs (saturating, halved per epoch) */
	u16 unfair_acks;	       /* unfair ACKs (saturating, halved per epoch) */
	u16 epoch_lost_pkts;	       /* recent losses (saturating, halved per epoch) */
	u16 round_lost_pkts;	       /* lost while congested, this interval (saturating) */
	u16 round_all_lost_pkts;       /* lost at all, this interval (saturating) */
	u16 fairness_q8;	       /* fairness ratio, Q8, 253..335 */
	u16 repair_hold_end_ms;	       /* a hold's end, ms, low 16 bits (the last
					* one's once over) */
	u8 mode;		       /* enum spline_mode */
	u8 loss_cnt;		       /* 0..255 */
	u8 epoch_rounds_left;	       /* rounds until the next mode choice */
	u8 bw_win_rounds;	       /* rounds into the current bw half-window */
	u8 lt_rounds;		       /* rounds into the lt sampling interval */
	u8 lt_use_rounds;	       /* >0: pacing at lt_bw for this many rounds */
	u8 flags;		       /* SPL_F_* */
	u8 loss_ratio_q8;	       /* lost / delivered of the last sampling
					* interval, Q8, at most 255 */
	u8 congested_rounds;	       /* consecutive rounds with a standing queue
					* (saturating) */
	u8 reord_seen_mark;	       /* tp->reord_seen at the round start, low 8
					* bits */
	u16 round_held_ms;	       /* repair holds started this round, ms
					* (saturating) */
	u8 held_q8;		       /* the last round's time held, Q8 of its
					* smoothed RTT, at most 128 (one half) */
	u8 rate_floor_ms;	       /* the RTT floor the path shows at the
					* flow's rate, ms above min_rtt (0: none;
					* spline_floor_rtt_us) */
};

/* Everything spline_on_ack() needs from one ACK, with units. */
struct spline_ack {
	u64 now_us;			   /* tp->tcp_mstamp */
	u64 max_pacing_rate_bytes_per_sec; /* sk->sk_max_pacing_rate */
	s64 rs_interval_us;		   /* rate sample interval, <= 0: invalid */
	s64 rs_rtt_us;			   /* RTT sample, < 0: none */
	s32 rs_delivered_pkts;		   /* delivered over the interval, < 0: invalid */
	s32 rs_losses_pkts;		   /* packets newly marked lost by this ACK */
	u32 rs_prior_delivered_pkts;	   /* tp->delivered when the sample's packet left */
	u32 delivered_total_pkts;	   /* tp->delivered */
	u32 lost_total_pkts;		   /* tp->lost */
	u32 acked_sacked_pkts;		   /* newly delivered by this ACK */
	u32 prior_in_flight_pkts;	   /* in flight before this ACK */
	u32 in_flight_pkts;		   /* in flight after this ACK */
	u32 mss_bytes;			   /* tp->mss_cache */
	u32 srtt_us;			   /* smoothed RTT (tp->srtt_us >> 3), 0: none */
	u32 cwnd_pkts;			   /* current snd_cwnd */
	u32 cwnd_clamp_pkts;		   /* snd_cwnd_clamp */
	u32 reord_seen_total;		   /* tp->reord_seen: reordering events seen */
	bool app_limited;		   /* rs->is_app_limited */
};

/* What the caller writes back. pacing_valid is 0 until a rate is known. */
struct spline_out {
	u64 pacing_rate_bytes_per_sec;
	u32 cwnd_pkts;
	bool pacing_valid;
};

/* --- Small helpers ------------------------------------------------------------------ */
static inline u32 spl_min_u32(u32 a, u32 b)
{
	return a < b ? a : b;
}
static inline u32 spl_max_u32(u32 a, u32 b)
{
	return a > b ? a : b;
}
static inline u64 spl_min_u64(u64 a, u64 b)
{
	return a < b ? a : b;
}
static inline u64 spl_max_u64(u64 a, u64 b)
{
	return a > b ? a : b;
}

static inline u16 spl_sat_add_u16(u16 a, u32 b)
{
	u32 sum = (u32)a + spl_min_u32(b, SPL_COUNTER_MAX);

	return (u16)spl_min_u32(sum, SPL_COUNTER_MAX);
}

/* xorshift32: a tiny PRNG for epoch lengths (quality is irrelevant, we only
 * need competing flows to disagree).
 */
static inline u32 spline_random(struct spline_state *s)
{
	u32 x = s->rng_state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	s->rng_state = x ? x : 0x9e3779b9U;
	return x;
}

/* Delivery rate as sampled: the policed rate when a policer was found,
 * else the windowed max of the samples.
 */
static inline u32 spline_sampled_bw_bytes_per_sec(const struct spline_state *s)
{
	if (s->lt_use_rounds)
		return s->lt_bw_bytes_per_sec;
	return spl_max_u32(s->bw_cur_bytes_per_sec, s->bw_prev_bytes_per_sec);
}

/* gain x bw x rtt in packets; 0 when the model has no data yet. */
static inline u32 spline_bdp_pkts(u32 bw_bytes_per_sec, u32 rtt_us, u32 gain_q8, u32 mss_bytes)
{
	u64 bytes;

	if (!bw_bytes_per_sec || !rtt_us || !mss_bytes)
		return 0;
	/* u32 x u32 fits u64; after /10^6 at most 1.9e13, x gain < 2^55 */
	bytes = SPL_DIV_U64((u64)bw_bytes_per_sec * rtt_us, SPL_USEC_PER_SEC);
	bytes = (bytes * gain_q8) >> SPL_UNIT_SHIFT;
	bytes = SPL_DIV_U64(bytes + mss_bytes - 1, (u64)mss_bytes);
	return (u32)spl_min_u64(bytes, 0xffffffffULL);
}

/* Stability score tf = (0.75 x stable) / (1.5 x (recent_losses + unfair)),
 * Q8, saturating at SPL_TF_MAX. With no losses and no unfair ACKs the score
 * is the maximum if there were stable ACKs, and neutral (1.0) if there were
 * none: the RTT sat out of band without jumping and nothing was lost, i.e. a
 * steady shared queue. Scoring that 0 sent whichever flow had the narrower
 * band to PROBE_RTT, where it yielded its share for good (simulator).
 */
static inline u32 spline_stability_q8(const struct spline_state *s)
{
	u32 num = 3U * s->stable_acks;				   /* 0.75 x stable, x4 */
	u32 den = 6U * ((u32)s->epoch_lost_pkts + s->unfair_acks); /* 1.5 x, x4 */

	if (!den)
		return num ? SPL_TF_MAX : SPL_UNIT;
	return spl_min_u32((num << SPL_UNIT_SHIFT) / den, SPL_TF_MAX);
}

/* The path's RTT floor at the flow's rate, us: min_rtt plus the rate floor
 * (item 25), at most SPL_RATE_FLOOR_MAX_SHIFT's share of min_rtt above it.
 */
static inline u32 spline_floor_rtt_us(const struct spline_state *s)
{
	return s->min_rtt_us + spl_min_u32((u32)s->rate_floor_ms * SPL_USEC_PER_MSEC,
					   s->min_rtt_us >> SPL_RATE_FLOOR_MAX_SHIFT);
}

/* The rate floor from the last round's floor (queue_rtt_us), ms above min_rtt. */
static inline void spline_measure_rate_floor(struct spline_state *s)
{
	u32 excess_us = s->queue_rtt_us > s->min_rtt_us ? s->queue_rtt_us - s->min_rtt_us : 0;

	s->rate_floor_ms = (u8)spl_min_u32((u32)SPL_DIV_U64(excess_us, SPL_USEC_PER_MSEC),
					   SPL_RATE_FLOOR_MS_MAX);
}

/* A new min_rtt (a lower sample, or a drain's re-measurement): the rate floor
 * stays the RTT it was measured at. A packet sent after a gap sees the path's
 * bare delay and lowers min_rtt; the floor at rate does not move with it.
 */
static inline void spline_set_min_rtt(struct spline_state *s, u32 min_rtt_us)
{
	u32 floor_us = s->min_rtt_us + (u32)s->rate_floor_ms * SPL_USEC_PER_MSEC;
	u32 excess_ms = 0;

	if (s->rate_floor_ms && floor_us > min_rtt_us)
		excess_ms = (u32)SPL_DIV_U64(floor_us - min_rtt_us, SPL_USEC_PER_MSEC);
	s->rate_floor_ms = (u8)spl_min_u32(excess_ms, SPL_RATE_FLOOR_MS_MAX);
	s->min_rtt_us = min_rtt_us;
}

/* Standing queue in us: the last round's smallest RTT sample above the path's
 * floor at the flow's rate (min_rtt where the floor does not rise with it).
 */
static inline u32 spline_queue_us(const struct spline_state *s)
{
	u32 floor_us = spline_floor_rtt_us(s);

	if (!s->queue_rtt_us || s->queue_rtt_us <= floor_us)
		return 0;
	return s->queue_rtt_us - floor_us;
}

/* Queue the flow tolerates before it calls a round congested, us (the band):
 * the queue the model window itself keeps (gain 1.25: a quarter of min_rtt),
 * at least 4 ms. A 4 ms band read the flow's own probing queue as congestion
 * under 15% random loss and the loss backoff engaged; a band that widened per
 * flow under jitter (the design's rtt_epoch) let the flow with the wider band
 * grow while the other yielded (simulator, two flows, 8 seeds: mean Jain 0.72,
 * worst 0.56; with this band 0.80 and 0.60). Every flow on a path with the
 * same min_rtt reads a shared queue alike.
 */
static inline u32 spline_queue_band_us(const struct spline_state *s)
{
	u32 own_us =
		(u32)(((u64)s->min_rtt_us * (SPL_MODEL_CWND_GAIN - SPL_UNIT)) >> SPL_UNIT_SHIFT);

	return spl_max_u32(SPL_QUEUE_BAND_MIN_US, own_us);
}

/* Congestion is a standing queue: losses while it stands are the path's
 * buffer overflowing; losses without it are random (radio, a lossy link).
 */
static inline bool spline_congested(const struct spline_state *s)
{
	return spline_queue_us(s) > spline_queue_band_us(s);
}

/* The standing queue has outlasted what Spline itself keeps (see
 * SPL_FOREIGN_QUEUE_ROUNDS).
 */
static inline bool spline_queue_foreign(const struct spline_state *s)
{
	return s->congested_rounds >= SPL_FOREIGN_QUEUE_ROUNDS;
}

/* --- Init and events --------------------------------------------------------------- */

static inline void spline_init_state(struct spline_state *s, u32 init_cwnd_pkts, u32 random)
{
	*s = (struct spline_state){0};
	s->mode = SPL_START_PROBE;
	s->epoch_rounds_left = SPL_FIRST_EPOCH_ROUNDS;
	s->fairness_q8 = SPL_UNIT;
	s->rng_state = random ? random : 0x2545f491U;
	s->curr_cwnd_pkts = spl_max_u32(init_cwnd_pkts, SPL_MIN_CWND_PKTS);
	s->prior_cwnd_pkts = s->curr_cwnd_pkts;
}

/* Loss recovery starts: remember the window for undo; keep ssthresh. */
static inline void spline_save_cwnd(struct spline_state *s, u32 cwnd_pkts)
{
	s->prior_cwnd_pkts = spl_max_u32(s->prior_cwnd_pkts, cwnd_pkts);
}

/* A retransmission timeout: the kernel has cut the window to in flight + 1.
 * Regrow by the delivered packets per ACK (doubling per round) up to the
 * model instead of jumping back; count it as a lossy round only when the
 * path holds a standing queue. At 10% random loss a lost retransmission
 * times out every few seconds, and counting each one ran loss_cnt past the
 * backoff threshold: the window sat at 20 packets of a 155-packet BDP for
 * 6 s (VM, 20 Mbit/s, 90 +-20 ms).
 */
static inline void spline_on_rto(struct spline_state *s, u32 cwnd_pkts)
{
	spline_save_cwnd(s, cwnd_pkts);
	s->flags |= SPL_F_RTO_REGROW;
	s->flags &= ~SPL_F_REPAIR_HOLD;
	if (spline_congested(s) && s->loss_cnt < SPL_LOSS_CNT_MAX)
		s->loss_cnt++;
}

/* Recovery turned out spurious: return the larger window. */
static inline u32 spline_undo_cwnd_pkts(struct spline_state *s, u32 cwnd_pkts)
{
	s->flags &= ~SPL_F_RTO_REGROW;
	return spl_max_u32(cwnd_pkts, s->prior_cwnd_pkts);
}

/* Transmission restarts after idle: the estimate is old, so pace at 1.0
 * until the first ACK that is not application limited.
 */
static inline void spline_on_idle_restart(struct spline_state *s)
{
	s->flags |= SPL_F_IDLE_RESTART;
}

/* --- Estimators ------------------------------------------------------------------------ */

/* Did a new ACK round start? (the packet this sample covers left after the
 * previous round's last packet was delivered)
 */
static inline bool spline_round_start(struct spline_state *s, const struct spline_ack *a)
{
	if (a->rs_delivered_pkts < 0 || a->rs_interval_us <= 0)
		return false;
	if ((s32)(a->rs_prior_delivered_pkts - s->next_round_delivered_pkts) < 0)
		return false;
	s->next_round_delivered_pkts = a->delivered_total_pkts;
	return true;
}

/* The repair holds' own pauses (item 19, stop 23; applied to the estimate,
 * not the samples, since stop 24). A hold (below) sends nothing for the RTT
 * spread; a rate sample whose interval spans holds counts their time as if
 * the path had carried nothing, so it reads the path slower by the share of
 * the time held. The window is made of the estimate (x 1.25 / (1 - loss)),
 * so with holds taking a share h of each round the window settled where
 * 1.25 x (1 - h) = 1, h = 1/5, whatever the link: at 10% loss (a loss every
 * few ms) that was 2-4 of 20 Mbit/s (VM, 90 +-20 ms). So the estimate the
 * window and the pacing use is divided by (1 - h) of the last round (the time
 * not held): the flow must carry a round's delivery in the time it may send.
 * h is at most one half (a hold never outlasts the time unheld before it), so the
 * estimate at most doubles (a u32 << 8 fits a u64).
 *
 * The correction applies to the windowed max as read, not to each sample
 * before it enters the filter (stop 23): the max picks the samples the holds
 * did not depress (a refill after a hold drains at the link's rate), and a
 * corrected one stayed in the filter for 5-10 rounds after the holds that
 * justified it stopped: up to 2x the link in the window and the pacing, the
 * queue overflowing a 1-BDP buffer (VM, 200 +-50 ms, 1%: tbf drops 116-391 a
 * run against BBR's 0-107). Read at the estimate, the correction ends with
 * the first round without holds.
 *
 * Not while a queue stands (congested): the bottleneck then drains it during
 * a hold and delivers on, the held time cost no delivery, and the correction
 * only inflated the estimate: VM, 200 +-50 ms, 1%, p95 RTT 418 ms against
 * BBR's 266 and the 1-BDP buffer overflowing (78% of the retransmissions
 * router drops).
 */
static inline u32 spline_unheld_bw(const struct spline_state *s, u32 bw_bytes_per_sec)
{
	u64 bw;

	if (!s->held_q8 || spline_congested(s))
		return bw_bytes_per_sec;
	bw = SPL_DIV_U64((u64)bw_bytes_per_sec << SPL_UNIT_SHIFT, SPL_UNIT - s->held_q8);
	return (u32)spl_min_u64(bw, SPL_BW_MAX_BYTES_PER_SEC);
}

/* Bandwidth the model uses (window, pacing, BDP): the sampled rate, corrected
 * for the last round's repair holds; a policer's rate as found.
 */
static inline u32 spline_bw_bytes_per_sec(const struct spline_state *s)
{
	if (s->lt_use_rounds)
		return s->lt_bw_bytes_per_sec;
	return spline_unheld_bw(s, spline_sampled_bw_bytes_per_sec(s));
}

/* At a round start: the share of the round that ended spent in holds (its
 * length taken as the smoothed RTT), Q8, at most one half.
 */
static inline void spline_update_held(struct spline_state *s, const struct spline_ack *a,
				      bool round_start)
{
	u64 held_q8;

	if (!round_start)
		return;
	held_q8 = a->srtt_us
			  ? SPL_DIV_U64((u64)s->round_held_ms * SPL_USEC_PER_MSEC << SPL_UNIT_SHIFT,
					a->srtt_us)
			  : 0;
	s->held_q8 = (u8)spl_min_u64(held_q8, SPL_HELD_MAX_Q8);
	s->round_held_ms = 0;
}

/* Delivery-rate sample into the windowed max. App-limited samples count only
 * when they raise the estimate. A half-window with no valid sample (an
 * app-limited or idle stretch) does not push the older maximum out, so the
 * estimate survives idle periods. In DRAIN_PROBE (pacing 0.39) and while
 * the loss backoff shrinks the window, Spline itself holds delivery down, so
 * the estimate is not aged out then (it would spiral down with the window).
 */
static inline void spline_update_bw(struct spline_state *s, const struct spline_ack *a,
				    u32 mss_bytes, bool round_start)
{
	u64 sample;
	u32 pkts;

	/* START_PROBE: half-windows of one round, and did the round that ended
	 * deliver a quarter more than the one before?
	 */
	if (round_start && s->mode == SPL_START_PROBE) {
		if ((u64)s->bw_cur_bytes_per_sec * SPL_START_GROWTH_DEN >=
		    (u64)s->bw_prev_bytes_per_sec * SPL_START_GROWTH_NUM)
			s->flags |= SPL_F_START_GROWING;
		else
			s->flags &= ~SPL_F_START_GROWING;
		if (s->bw_cur_bytes_per_sec) {
			s->bw_prev_bytes_per_sec = s->bw_cur_bytes_per_sec;
			s->bw_cur_bytes_per_sec = 0;
		}
	} else if (round_start && s->mode != SPL_DRAIN_PROBE &&
		   s->loss_cnt <= SPL_LOSS_CNT_BACKOFF &&
		   ++s->bw_win_rounds >= SPL_BW_HALF_WIN_ROUNDS) {
		s->bw_win_rounds = 0;
		if (s->bw_cur_bytes_per_sec) {
			s->bw_prev_bytes_per_sec = s->bw_cur_bytes_per_sec;
			s->bw_cur_bytes_per_sec = 0;
		}
	}
	if (a->rs_delivered_pkts <= 0 || a->rs_interval_us <= 0)
		return;
	pkts = spl_min_u32((u32)a->rs_delivered_pkts, SPL_MAX_SAMPLE_PKTS);
	sample = SPL_DIV_U64((u64)pkts * mss_bytes * SPL_USEC_PER_SEC, (u64)a->rs_interval_us);
	sample = spl_min_u64(sample, SPL_BW_MAX_BYTES_PER_SEC);
	if (a->app_limited && sample < spline_sampled_bw_bytes_per_sec(s))
		return;
	s->bw_cur_bytes_per_sec = spl_max_u32(s->bw_cur_bytes_per_sec, (u32)sample);
}

/* min_rtt with a 10 s expiry. When it expires (the path may have changed)
 * the flow drains (DRAIN_PROBE until in flight <= BDP); the smallest sample seen
 * during that drain, which sees an empty queue, becomes the new minimum (it
 * may be larger than the old one: the path changed). Taking the first sample
 * after expiry instead let a standing queue become the new "minimum" and the
 * model window grow with it (seen in the simulator: 40 ms -> 68 ms).
 */
static inline void spline_update_min_rtt(struct spline_state *s, const struct spline_ack *a,
					 u32 now_ms)
{
	u32 rtt_us;
	bool expired;

	if (a->rs_rtt_us <= 0)
		return;
	rtt_us = (u32)spl_min_u64((u64)a->rs_rtt_us, 0xffffffffULL);
	if (s->flags & SPL_F_MIN_RTT_PROBE)
		s->probe_min_rtt_us = spl_min_u32(s->probe_min_rtt_us, rtt_us);
	expired = s->min_rtt_us && (u32)(now_ms - s->min_rtt_stamp_ms) > SPL_MIN_RTT_WIN_MS;
	if (!s->min_rtt_us || rtt_us <= s->min_rtt_us) {
		spline_set_min_rtt(s, rtt_us);
		s->min_rtt_stamp_ms = now_ms;
	} else if (expired) {
		s->min_rtt_stamp_ms = now_ms;
		if (s->mode == SPL_START_PROBE) {
			s->min_rtt_us = rtt_us;
		} else {
			/* keep the old value until the drain has measured */
			s->mode = SPL_DRAIN_PROBE;
			s->flags |= SPL_F_MIN_RTT_PROBE;
			s->probe_min_rtt_us = rtt_us;
		}
	}
}

/* At a round start, the round's floor just taken (see SPL_RATE_FLOOR_MAX_SHIFT):
 * measured in a START round whose delivery grew, lowered by a lower floor at
 * the flow's rate later.
 */
static inline void spline_update_rate_floor(struct spline_state *s, const struct spline_ack *a)
{
	u32 floor_us = spline_floor_rtt_us(s);

	if (s->mode == SPL_START_PROBE) {
		if (s->flags & SPL_F_START_GROWING)
			spline_measure_rate_floor(s);
		return;
	}
	if (s->mode == SPL_DRAIN_PROBE || s->queue_rtt_us >= floor_us)
		return;
	if (a->in_flight_pkts >= spline_bdp_pkts(spline_bw_bytes_per_sec(s), floor_us, SPL_UNIT,
						 a->mss_bytes ? a->mss_bytes : 1))
		spline_measure_rate_floor(s);
}

/* Is this ACK stable (no standing queue beyond the band, the queue not
 * rising, delivery steady) or unfair (a standing queue and, in addition, the
 * queue rising or delivery stalling)?
 *
 * The design compares the smoothed RTT with the previous one and with
 * min_rtt. Under jitter wider than the band (50 ms on a 200 ms path) the
 * smoothed RTT is out of band all the time: no ACK was ever stable, the flow
 * sat in PROBE_RTT / DRAIN_PROBE and got 2.9 Mbit/s of 10 where BBR got 7
 * (VM). So the queue is measured instead: the smallest RTT sample of each
 * round (queue_rtt_us) is min_rtt plus the standing queue, whatever the
 * jitter; "previous RTT" becomes the previous round's minimum. The design's
 * widening tolerance band (rtt_epoch, 4..32 ms), which let jitter pass for
 * stability, is gone with it: the round minimum filters jitter out, and a
 * band that widened per flow made two flows sharing one queue disagree on
 * whether it was congested (see spline_queue_band_us).
 */
static inline void spline_classify_ack(struct spline_state *s, const struct spline_ack *a,
				       bool round_start)
{
	u32 rtt_us;
	bool prev_ok, min_ok, delivery_ok;

	s->last_ack_pkts = s->curr_ack_pkts;
	s->curr_ack_pkts = a->acked_sacked_pkts;
	if (round_start && s->round_min_rtt_us) {
		s->flags &= ~SPL_F_QUEUE_RISING;
		if (s->queue_rtt_us &&
		    s->round_min_rtt_us > s->queue_rtt_us + (spline_queue_band_us(s) >> 1))
			s->flags |= SPL_F_QUEUE_RISING;
		s->queue_rtt_us = s->round_min_rtt_us;
		s->round_min_rtt_us = 0;
		spline_update_rate_floor(s, a);
		if (!spline_congested(s))
			s->congested_rounds = 0;
		else if (spline_queue_us(s) > 2 * spline_queue_band_us(s) &&
			 s->congested_rounds < 0xff)
			s->congested_rounds++;
	}
	if (a->rs_rtt_us <= 0 || !s->min_rtt_us)
		return;
	rtt_us = (u32)spl_min_u64((u64)a->rs_rtt_us, 0xffffffffULL);
	if (!s->round_min_rtt_us || rtt_us < s->round_min_rtt_us)
		s->round_min_rtt_us = rtt_us;
	if (!s->queue_rtt_us)
		s->queue_rtt_us = rtt_us;

	prev_ok = !(s->flags & SPL_F_QUEUE_RISING);
	min_ok = !spline_congested(s);
	delivery_ok =
		s->curr_ack_pkts && s->curr_ack_pkts * SPL_DELIVERY_DROP_DIV >= s->last_ack_pkts;

	if (prev_ok && min_ok && delivery_ok)
		s->stable_acks = spl_sat_add_u16(s->stable_acks, 1);
	else if (!min_ok && (!prev_ok || !delivery_ok))
		s->unfair_acks = spl_sat_add_u16(s->unfair_acks, 1);
}

/* fairness = bw / (in_flight x mss / min_rtt) = bw x min_rtt / in-flight
 * bytes, clamped to [0.99, 1.31]. Above 1: the path could carry more than
 * the flow has in flight.
 */
static inline void spline_update_fairness(struct spline_state *s, const struct spline_ack *a,
					  u32 mss_bytes)
{
	u64 bdp_bytes, inflight_bytes, ratio_q8;
	u32 bw = spline_bw_bytes_per_sec(s);

	if (!bw || !s->min_rtt_us)
		return;
	bdp_bytes = SPL_DIV_U64((u64)bw * s->min_rtt_us, SPL_USEC_PER_SEC);
	inflight_bytes = (u64)a->in_flight_pkts * mss_bytes;
	if (!inflight_bytes) {
		s->fairness_q8 = SPL_FAIR_MAX;
		return;
	}
	ratio_q8 = SPL_DIV_U64(bdp_bytes << SPL_UNIT_SHIFT, inflight_bytes);
	ratio_q8 = spl_max_u64(spl_min_u64(ratio_q8, SPL_FAIR_MAX), SPL_FAIR_MIN);
	s->fairness_q8 = (u16)ratio_q8;
}

static inline void spline_lt_reset_interval(struct spline_state *s, const struct spline_ack *a,
					    u32 now_ms)
{
	s->lt_rounds = 0;
	s->lt_start_delivered_pkts = a->delivered_total_pkts;
	s->lt_start_lost_pkts = a->lost_total_pkts;
	s->lt_start_ms = now_ms;
	s->flags |= SPL_F_LT_STARTED;
}

/* Long-term sampler (token-bucket policers): over intervals of 4-16 rounds,
 * if the loss rate is at least 20% and two consecutive intervals deliver at
 * the same rate (within 1/8 or 4 kbit/s), the path is policed at that rate:
 * use it, at pacing gain 1.0, for 48 rounds, then look again.
 */
static inline void spline_update_lt_bw(struct spline_state *s, const struct spline_ack *a,
				       u32 mss_bytes, u32 now_ms)
{
	u32 delivered, lost, elapsed_ms, diff;
	u64 sample;

	if (s->lt_use_rounds) {
		if (--s->lt_use_rounds == 0) {
			s->lt_bw_bytes_per_sec = 0;
			spline_lt_reset_interval(s, a, now_ms);
		}
		return;
	}
	if (!(s->flags & SPL_F_LT_STARTED)) {
		spline_lt_reset_interval(s, a, now_ms);
		return;
	}
	if (++s->lt_rounds < SPL_LT_MIN_ROUNDS)
		return;
	delivered = a->delivered_total_pkts - s->lt_start_delivered_pkts;
	lost = a->lost_total_pkts - s->lt_start_lost_pkts;
	elapsed_ms = now_ms - s->lt_start_ms;
	if ((u64)lost * SPL_LT_LOSS_DIV < delivered || !delivered) {
		if (s->lt_rounds > SPL_LT_MAX_ROUNDS) {
			s->lt_bw_bytes_per_sec = 0;
			spline_lt_reset_interval(s, a, now_ms);
		}
		return;
	}
	if (!elapsed_ms) {
		spline_lt_reset_interval(s, a, now_ms);
		return;
	}
	sample = SPL_DIV_U64((u64)delivered * mss_bytes * SPL_MSEC_PER_SEC, (u64)elapsed_ms);
	sample = spl_min_u64(sample, SPL_BW_MAX_BYTES_PER_SEC);
	if (s->lt_bw_bytes_per_sec) {
		diff = s->lt_bw_bytes_per_sec > (u32)sample ? s->lt_bw_bytes_per_sec - (u32)sample
							    : (u32)sample - s->lt_bw_bytes_per_sec;
		if ((u64)diff * SPL_LT_BW_REL_DIV <= s->lt_bw_bytes_per_sec ||
		    diff <= SPL_LT_BW_ABS_BYTES_PER_SEC) {
			s->lt_bw_bytes_per_sec = (u32)(((u64)s->lt_bw_bytes_per_sec + sample) >> 1);
			s->lt_use_rounds = SPL_LT_USE_ROUNDS;
			spline_lt_reset_interval(s, a, now_ms);
			return;
		}
	}
	s->lt_bw_bytes_per_sec = (u32)sample;
	spline_lt_reset_interval(s, a, now_ms);
}

/* End of a round: a sampling interval (>= 1 round, >= 32 packets) that lost
 * more than 10% of its packets while the path was congested raises loss_cnt; a stable one
 * lowers it. Every interval records its loss ratio (for the random-loss
 * allowance of the window).
 */
static inline void spline_update_loss_cnt(struct spline_state *s)
{
	u32 ratio_q8;

	if (s->round_delivered_pkts < SPL_LOSS_SAMPLE_MIN_PKTS)
		return; /* keep sampling into the next round */
	ratio_q8 = ((u32)s->round_all_lost_pkts << SPL_UNIT_SHIFT) / s->round_delivered_pkts;
	s->loss_ratio_q8 = (u8)spl_min_u32(ratio_q8, 255U);
	if ((u32)s->round_lost_pkts * SPL_LOSS_HIGH_DIV > s->round_delivered_pkts) {
		if (s->loss_cnt < SPL_LOSS_CNT_MAX)
			s->loss_cnt++;
	} else if (s->loss_cnt && spline_stability_q8(s) >= SPL_TF_HIGH) {
		s->loss_cnt--;
	}
	s->round_delivered_pkts = 0;
	s->round_lost_pkts = 0;
	s->round_all_lost_pkts = 0;
}

static inline bool spline_recent_losses_high(const struct spline_state *s)
{
	return (u64)s->epoch_lost_pkts * SPL_LOSS_HIGH_DIV > s->epoch_delivered_pkts ||
	       s->loss_cnt > SPL_LOSS_CNT_FAIR;
}

/* The first epoch's end: drain START_PROBE's queue and take the drain's
 * smallest RTT as min_rtt, as the 10 s expiry does (stop 24). START's first
 * samples see the path carrying a few packets; on a path whose delay grows
 * with the rate (jitter that keeps order: a packet waits for the slowest one
 * ahead of it, so at 10 Mbit/s, 200 +-50 ms the round's smallest RTT is
 * ~210-245 ms at rate against 163-175 ms for the first packets) that minimum
 * reads the path's own delay as a standing queue above the band: no ACK was
 * stable, the random losses counted as congestive, and the flow sat in
 * PROBE_RTT under the low-stability window (7/16 of target + model) until
 * min_rtt expired 10 s later (simulator, netem's in-order delay line before
 * the bottleneck: goodput 10 -> 4.5 Mbit/s from 5 s to 16 s, the VM's
 * pattern). The drain also empties the up to one BDP of queue START's cap
 * allows, as BBR's DRAIN does after STARTUP. Simulator: that path 4.2-8.3 ->
 * 7.6-8.6 Mbit/s over 6 seeds; shares against Reno 0.495 -> 0.496, CUBIC
 * 0.569 -> 0.588 (worst seed 0.386 -> 0.308) and 0.537 -> 0.523 with delay
 * noise (worst 0.359 -> 0.398), two flows' Jain 0.994 -> 0.997 (worst 0.971
 * -> 0.989).
 */
static inline void spline_leave_start(struct spline_state *s)
{
	s->mode = SPL_DRAIN_PROBE;
	s->flags |= SPL_F_MIN_RTT_PROBE;
	s->probe_min_rtt_us = SPL_PROBE_MIN_RTT_NONE;
}

/* End of a round: at the end of an epoch choose the next mode and the next
 * epoch's random length; DRAIN_PROBE ends early once the queue is gone.
 */
static inline void spline_update_mode(struct spline_state *s, const struct spline_ack *a)
{
	u32 tf, bdp;

	if (s->mode == SPL_DRAIN_PROBE) {
		bdp = spline_bdp_pkts(spline_bw_bytes_per_sec(s), s->min_rtt_us, SPL_UNIT,
				      a->mss_bytes ? a->mss_bytes : 1);
		if (bdp && a->in_flight_pkts <= bdp) {
			s->mode = SPL_PROBE_RTT;
			if (s->flags & SPL_F_MIN_RTT_PROBE) {
				if (s->probe_min_rtt_us != SPL_PROBE_MIN_RTT_NONE)
					spline_set_min_rtt(s, s->probe_min_rtt_us);
				s->flags &= ~SPL_F_MIN_RTT_PROBE;
			}
		}
	}
	if (s->epoch_rounds_left > 1) {
		s->epoch_rounds_left--;
		return;
	}
	tf = spline_stability_q8(s);
	if (s->mode == SPL_START_PROBE)
		spline_leave_start(s);
	else if (tf < SPL_TF_PROBE_RTT || s->unfair_acks > s->stable_acks)
		s->mode = SPL_PROBE_RTT;
	else
		s->mode = SPL_PROBE_BW;
	if (s->unfair_acks > s->stable_acks && spline_recent_losses_high(s))
		s->mode = SPL_DRAIN_PROBE;

	s->epoch_rounds_left = (u8)(1 + spline_random(s) % SPL_EPOCH_MAX_ROUNDS);
	/* the counters describe recent epochs: halve, do not forget */
	s->stable_acks >>= 1;
	s->unfair_acks >>= 1;
	s->epoch_lost_pkts >>= 1;
	s->epoch_delivered_pkts >>= 1;
}

static inline void spline_account_ack(struct spline_state *s, const struct spline_ack *a)
{
	u32 delivered = a->acked_sacked_pkts;
	u32 lost = a->rs_losses_pkts > 0 ? (u32)a->rs_losses_pkts : 0;

	s->round_delivered_pkts += delivered;
	s->epoch_delivered_pkts += delivered;
	s->round_all_lost_pkts = spl_sat_add_u16(s->round_all_lost_pkts, lost);
	/* Losses without a standing queue are random: they cost the lost
	 * packets and nothing more (no stability penalty, no loss_cnt).
	 */
	if (!spline_congested(s))
		return;
	s->round_lost_pkts = spl_sat_add_u16(s->round_lost_pkts, lost);
	s->epoch_lost_pkts = spl_sat_add_u16(s->epoch_lost_pkts, lost);
}

/* --- Window and pacing ----------------------------------------------------------------- */

/* RTT for the model window ("between min_rtt and curr_rtt"): the path's
 * floor at the flow's rate (min_rtt where it does not rise with the rate,
 * item 25; min_rtt itself in DRAIN_PROBE) plus
 * half of what the smoothed RTT shows above the last round's smallest sample
 * (the jitter: with samples spread, in flight = rate x mean RTT), at most
 * 32 ms and at most min_rtt itself; in DRAIN_PROBE min_rtt itself. The
 * standing queue is left out: with half the smoothed RTT's excess over
 * min_rtt, the window grew with the queue it had built, a flow kept 2/3 of
 * min_rtt queued on a clean path, and of two flows the one holding the queue
 * held the link (simulator, 8 seeds: mean Jain 0.80, worst 0.60; without the
 * queue 0.92 and 0.81, losses 2.6% -> 0.3%).
 * The min_rtt bound matters on paths with almost no propagation delay (veth,
 * LAN): there the queueing delay multiplied an ACK-compressed bandwidth
 * sample into a window of 1688 packets at 20 Mbit/s in the namespace bench.
 * PROBE_RTT uses the same model as PROBE_BW (as the design says) and drains
 * by pacing: with a window on min_rtt alone, a flow sharing a queue with
 * another lost a third of its window per round in PROBE_RTT and, in the
 * simulator, starved within two epochs.
 */
static inline u32 spline_model_rtt_us(const struct spline_state *s, const struct spline_ack *a)
{
	u32 extra_us = 0;
	u32 base_us = s->mode == SPL_DRAIN_PROBE ? s->min_rtt_us : spline_floor_rtt_us(s);
	u32 floor_us = spl_max_u32(s->queue_rtt_us, base_us);

	if (s->mode != SPL_DRAIN_PROBE && a->srtt_us > floor_us)
		extra_us = (a->srtt_us - floor_us) >> 1;
	extra_us = spl_min_u32(extra_us, SPL_MODEL_EXTRA_RTT_MAX_US);
	if (spline_queue_foreign(s))
		extra_us += spl_min_u32(spline_queue_us(s), s->min_rtt_us);
	return base_us + spl_min_u32(extra_us, s->min_rtt_us);
}

/* START_PROBE: a fixed step per ACK, capped (once the model exists) at
 * bw x (min_rtt + the floor at rate), 2 x the BDP where the floor does not
 * rise with the rate, so that the 20-round first epoch cannot overshoot
 * without bound: while the window is below the BDP the delivery rate tracks
 * the window and the cap does not bind. Where the floor rises with the rate
 * 2 x bw x min_rtt bound early: with the RTT at ~1.5 x min_rtt the window grew
 * ~1.3x a round (simulator, 10 Mbit/s 200 +-50 ms in order: 0.6, 2.2 and
 * 7.1 Mbit/s in seconds 1-3; VM 0.4-0.7, 1.5-2.3, 3.2-4.9).
 */
static inline u32 spline_start_cwnd(struct spline_state *s, u32 mss_bytes)
{
	u32 cwnd = s->curr_cwnd_pkts + SPL_START_STEP_PKTS;
	u32 cap = spline_bdp_pkts(spline_bw_bytes_per_sec(s),
				  s->min_rtt_us + spline_floor_rtt_us(s), SPL_UNIT, mss_bytes);

	if (cap)
		cwnd = spl_min_u32(cwnd, spl_max_u32(cap, s->curr_cwnd_pkts));
	s->curr_cwnd_pkts = cwnd;
	return cwnd;
}

/* The Spline window (steps 1-3 of the design), then the check against the
 * BDP target (step 4).
 */
static inline u32 spline_model_cwnd(struct spline_state *s, const struct spline_ack *a,
				    u32 mss_bytes)
{
	u32 bw = spline_bw_bytes_per_sec(s);
	u32 gain_q8, w, target, tf, ls, floor_pkts;
	bool lossy_phase;
	u64 w64;

	if (!bw || !s->min_rtt_us)
		return spl_max_u32(a->cwnd_pkts, s->curr_cwnd_pkts);

	/* 1. model window, x fairness in the lossy/unfair phase */
	gain_q8 = s->mode == SPL_DRAIN_PROBE ? SPL_DRAIN_CWND_GAIN : SPL_MODEL_CWND_GAIN;
	w64 = spline_bdp_pkts(bw, spline_model_rtt_us(s, a), gain_q8, mss_bytes);
	lossy_phase = (u32)s->unfair_acks * SPL_UNFAIR_MANY_MULT > s->stable_acks ||
		      spline_congested(s) || s->loss_cnt > SPL_LOSS_CNT_FAIR;
	if (lossy_phase)
		w64 = (w64 * s->fairness_q8) >> SPL_UNIT_SHIFT;
	/* random-loss allowance: / (1 - loss ratio), only without a queue */
	if (!spline_congested(s) && s->loss_ratio_q8 >= SPL_LOSS_ALLOW_MIN_Q8)
		w64 = SPL_DIV_U64(w64 << SPL_UNIT_SHIFT,
				  SPL_UNIT - spl_min_u32(s->loss_ratio_q8, SPL_LOSS_ALLOW_MAX_Q8));

	/* 2. loss backoff: x ls^3 / 2^ls, ls = min(loss_cnt, 12) */
	if (s->loss_cnt > SPL_LOSS_CNT_BACKOFF) {
		ls = spl_min_u32(s->loss_cnt, SPL_LOSS_CNT_BACKOFF_CAP);
		w64 = (w64 * ls * ls * ls) >> ls;
	}

	/* 3. never below the fairness-scaled previous window / 8, plus this
	 * ACK's delivery and, except while draining, the additive quantum. The
	 * stability score chooses the mode; it does not scale the window: a
	 * window x tf < 1 lowers delivery, which lowers the estimate the next
	 * window is made of, so it compounded every round the score stayed low
	 * (a multiplicative decrease per round, not per congestion event) and
	 * beside a loss-based flow under delay noise ran the window to its floor.
	 */
	tf = spline_stability_q8(s);
	floor_pkts = (u32)((((u64)s->curr_cwnd_pkts * s->fairness_q8) >> SPL_UNIT_SHIFT) >> 3);
	w = (u32)spl_min_u64(spl_max_u64(w64, floor_pkts), 0x7fffffffULL);
	w += spl_min_u32(a->acked_sacked_pkts, 0x7fffffffU);
	if (s->mode == SPL_PROBE_BW || s->mode == SPL_PROBE_RTT)
		w += SPL_PROBE_BW_QUANTUM_PKTS;
	s->curr_cwnd_pkts = w;

	/* 4. against the BDP target */
	target = spline_bdp_pkts(bw, s->min_rtt_us, SPL_TARGET_CWND_GAIN, mss_bytes);
	if (tf < SPL_TF_VERY_LOW && s->loss_cnt > SPL_LOSS_CNT_ALONE)
		return w;
	if (s->unfair_acks > s->stable_acks && s->epoch_lost_pkts)
		return (u32)((7ULL * ((u64)target + w)) >> 4);
	return spl_max_u32(target, w);
}

/* Pacing gain, Q8 (before the 0.99 margin): START_PROBE 1.0 (of what the
 * window carries), PROBE_BW 2.15 while in flight is below bw x min_rtt and
 * from there on the probe-then-drain cycle 1.25, 0.75, 1.0, 1.0, 1.0 by the
 * round of the bw half-window (1.25 throughout beside a foreign queue or at
 * 8% loss or more), PROBE_RTT 0.98, DRAIN_PROBE 0.39; 1.0 while a policer's
 * rate is used or after idle.
 */
static inline u32 spline_pacing_gain_q8(const struct spline_state *s, u32 in_flight_pkts,
					u32 mss_bytes)
{
	u32 gain;

	if (s->mode == SPL_START_PROBE)
		return SPL_START_PACING_GAIN;
	if (s->lt_use_rounds || (s->flags & SPL_F_IDLE_RESTART))
		return SPL_UNIT;
	if (s->mode == SPL_PROBE_BW) {
		if (in_flight_pkts <
		    spline_bdp_pkts(spline_bw_bytes_per_sec(s), s->min_rtt_us, SPL_UNIT, mss_bytes))
			return SPL_PROBE_BW_PACING_GAIN;
		if (s->congested_rounds > 0 || s->loss_ratio_q8 >= SPL_LOSS_ALLOW_MIN_Q8)
			return SPL_PROBE_BW_FULL_PACING_GAIN;
		gain = s->bw_win_rounds == 0   ? SPL_CYCLE_PROBE_GAIN
		       : s->bw_win_rounds == 1 ? SPL_CYCLE_DRAIN_GAIN
					       : SPL_UNIT;
		if (spline_congested(s))
			return gain;
		/* what the random loss takes before the bottleneck, sent on top */
		return (gain << SPL_UNIT_SHIFT) / (SPL_UNIT - s->loss_ratio_q8);
	}
	if (s->mode == SPL_PROBE_RTT)
		return SPL_PROBE_RTT_PACING_GAIN;
	return SPL_DRAIN_PACING_GAIN;
}

/* The Spline window over the BDP (bw x min_rtt), Q8, for diagnostics (the
 * kernel reports it to `ss` as the window gain); 0 without a model yet,
 * saturating at 0xffff (256 x the BDP).
 */
static inline u32 spline_window_gain_q8(const struct spline_state *s, u32 mss_bytes)
{
	u32 bdp = spline_bdp_pkts(spline_bw_bytes_per_sec(s), s->min_rtt_us, SPL_UNIT, mss_bytes);
	u64 gain_q8;

	if (!bdp)
		return 0;
	gain_q8 = SPL_DIV_U64((u64)s->curr_cwnd_pkts << SPL_UNIT_SHIFT, bdp);
	return (u32)spl_min_u64(gain_q8, 0xffffULL);
}

static inline u64 spline_pacing_rate(struct spline_state *s, const struct spline_ack *a,
				     u32 mss_bytes, u32 cwnd_pkts)
{
	u64 rate, rtt_us;

	if (s->mode == SPL_START_PROBE) {
		/* 1.0 x what the window carries on an empty path */
		rtt_us = s->min_rtt_us ? s->min_rtt_us : a->srtt_us;
		if (!rtt_us)
			return 0;
		rate = SPL_DIV_U64((u64)cwnd_pkts * mss_bytes * SPL_USEC_PER_SEC, rtt_us);
		rate = spl_max_u64(rate, spline_bw_bytes_per_sec(s));
	} else {
		rate = spline_bw_bytes_per_sec(s);
	}
	rate = (rate * spline_pacing_gain_q8(s, a->in_flight_pkts, mss_bytes)) >> SPL_UNIT_SHIFT;
	rate = (rate * SPL_PACING_MARGIN) >> SPL_UNIT_SHIFT;
	if (a->max_pacing_rate_bytes_per_sec)
		rate = spl_min_u64(rate, a->max_pacing_rate_bytes_per_sec);
	return rate;
}

/* --- Repairs held past the reordering span (see the constants) ------------------------- */

/* At a round start: did the round that ended see the path reorder? (8-bit
 * mark: a round with a multiple of 256 events reads as none, a rate no path
 * here comes near.)
 */
static inline void spline_update_reordering(struct spline_state *s, const struct spline_ack *a)
{
	u8 events = (u8)(a->reord_seen_total - s->reord_seen_mark);

	if (events >= SPL_REORDER_ROUND_EVENTS)
		s->flags |= SPL_F_REORDERING;
	else
		s->flags &= ~SPL_F_REORDERING;
	s->reord_seen_mark = (u8)a->reord_seen_total;
}

/* The hold: the jitter's span, twice the RTT spread (the smoothed RTT above
 * the last round's smallest sample: half the span of a uniform jitter), ms,
 * at most 64 ms and min_rtt / 2; 0 when the spread is below 2 ms.
 */
static inline u32 spline_repair_hold_ms(const struct spline_state *s, const struct spline_ack *a)
{
	u32 floor_us = spl_max_u32(s->queue_rtt_us, s->min_rtt_us);
	u32 spread_ms, hold_ms;

	if (!floor_us || a->srtt_us <= floor_us)
		return 0;
	spread_ms = (u32)SPL_DIV_U64((u64)(a->srtt_us - floor_us), SPL_USEC_PER_MSEC);
	if (spread_ms < SPL_REPAIR_HOLD_MIN_MS)
		return 0;
	hold_ms = spl_min_u32(2 * spl_min_u32(spread_ms, SPL_REPAIR_HOLD_MAX_MS),
			      SPL_REPAIR_HOLD_MAX_MS);
	hold_ms = spl_min_u32(hold_ms, (u32)SPL_DIV_U64((u64)s->min_rtt_us, 2 * SPL_USEC_PER_MSEC));
	/* random loss of 8% or more (the allowance's range): losses come every few ms and
	 * holds up to half the time cost the window's delivery; half the span still leaves
	 * (1/2)^3 of the discards of none. VM, 90 +-20 ms, 10%, full hold: goodput 1.03-1.30x
	 * BBR's in 4 boots (1.24, 1.03, 1.30, 1.05), before the hold 2.0-3.2x.
	 */
	if (s->loss_ratio_q8 >= SPL_LOSS_ALLOW_MIN_Q8)
		hold_ms >>= 1;
	return hold_ms >= SPL_REPAIR_HOLD_MIN_MS ? hold_ms : 0;
}

/* How long a hold may last if it starts now, ms (0: none). The holds take at
 * most half the time: a hold never outlasts the unheld time since the last
 * one ended. From 8% random loss on (the allowance's range), where losses
 * come every few ms, a hold starts only once as long as it lasts has passed
 * (a hold per loss would hold for good). Below it a loss marked sooner gets a
 * shorter hold, as long as that unheld time (stop 24): the full-or-nothing
 * rule left every loss marked in the pause after a hold unheld, and an
 * unheld repair at 200 +-50 ms, ~0.6 packets a ms, has r x W / 6 = ~10 late
 * originals discarded by PAWS, each needing a repair of its own; with ~5
 * losses a second and 64 ms holds a third of the repairs fell in such a pause
 * (VM: 160-447 PAWS discards a run against 88-106 path drops). A hold of g ms
 * leaves (1 - g / W)^3 of those discards.
 */
static inline u32 spline_repair_hold_now_ms(const struct spline_state *s, u16 now16, u32 hold_ms)
{
	u32 unheld_ms = (u16)(now16 - s->repair_hold_end_ms);

	if (unheld_ms >= hold_ms)
		return hold_ms;
	if (s->loss_ratio_q8 >= SPL_LOSS_ALLOW_MIN_Q8 || unheld_ms < SPL_REPAIR_HOLD_MIN_MS)
		return 0;
	return unheld_ms;
}

/* The window this ACK leaves: cwnd, or while a hold runs what is in flight
 * (nothing leaves: neither the repairs nor new data). A hold starts on an
 * ACK that marks losses on a reordering path, not after an RTO, and lasts at
 * most as long as the time unheld since the last one (see above).
 * At most one a round instead left the second loss event of a round unheld:
 * VM, 200 +-50 ms, PAWS discards 300 a run against 247 and retransmissions
 * 0.59x BBR's against 0.35x, at 10% loss no better goodput (1.30x BBR at load
 * 9, 1.24x at load 6.5).
 */
static inline u32 spline_repair_hold_cwnd(struct spline_state *s, const struct spline_ack *a,
					  u32 now_ms, u32 cwnd)
{
	u16 now16 = (u16)now_ms;
	u32 hold_ms, held;

	held = spl_min_u32(cwnd, spl_max_u32(a->in_flight_pkts, 1));
	if (s->flags & SPL_F_REPAIR_HOLD) {
		if ((s16)(u16)(now16 - s->repair_hold_end_ms) < 0)
			return held;
		s->flags &= ~SPL_F_REPAIR_HOLD;
		return cwnd;
	}
	if (a->rs_losses_pkts <= 0 || !(s->flags & SPL_F_REORDERING) ||
	    (s->flags & SPL_F_RTO_REGROW))
		return cwnd;
	hold_ms = spline_repair_hold_now_ms(s, now16, spline_repair_hold_ms(s, a));
	if (!hold_ms)
		return cwnd;
	s->repair_hold_end_ms = (u16)(now16 + hold_ms);
	s->flags |= SPL_F_REPAIR_HOLD;
	s->round_held_ms = (u16)spl_min_u32((u32)s->round_held_ms + hold_ms, 0xffffU);
	return held;
}

/* --- The per-ACK update ------------------------------------------------------------------- */
static inline void spline_on_ack(struct spline_state *s, const struct spline_ack *a,
				 struct spline_out *out)
{
	u32 mss_bytes = a->mss_bytes ? a->mss_bytes : 1;
	u32 now_ms = (u32)SPL_DIV_U64(a->now_us, SPL_USEC_PER_MSEC);
	bool round_start = spline_round_start(s, a);
	u32 cwnd, clamp;
	u64 rate;

	spline_update_held(s, a, round_start);
	spline_update_bw(s, a, mss_bytes, round_start);
	spline_update_min_rtt(s, a, now_ms);
	spline_classify_ack(s, a, round_start);
	spline_update_fairness(s, a, mss_bytes);
	if (round_start) {
		spline_update_lt_bw(s, a, mss_bytes, now_ms);
		spline_update_reordering(s, a);
		spline_update_loss_cnt(s);
		spline_update_mode(s, a);
	}
	spline_account_ack(s, a);
	if ((s->flags & SPL_F_IDLE_RESTART) && a->acked_sacked_pkts && !a->app_limited)
		s->flags &= ~SPL_F_IDLE_RESTART;

	if (s->mode == SPL_START_PROBE)
		cwnd = spline_start_cwnd(s, mss_bytes);
	else
		cwnd = spline_model_cwnd(s, a, mss_bytes);

	/* after an RTO: regrow from what the kernel left, by delivery */
	if (s->flags & SPL_F_RTO_REGROW) {
		u32 regrow = a->cwnd_pkts + a->acked_sacked_pkts;

		if (regrow >= cwnd)
			s->flags &= ~SPL_F_RTO_REGROW;
		else
			cwnd = regrow;
	}

	clamp = a->cwnd_clamp_pkts ? a->cwnd_clamp_pkts : 0xffffffffU;
	cwnd = spl_max_u32(cwnd, SPL_MIN_CWND_PKTS);
	cwnd = spl_min_u32(cwnd, clamp);
	out->cwnd_pkts = spline_repair_hold_cwnd(s, a, now_ms, cwnd);

	rate = spline_pacing_rate(s, a, mss_bytes, cwnd);
	out->pacing_valid = rate != 0;
	out->pacing_rate_bytes_per_sec = rate;
}

#endif /* SPLINE_CORE_H */
