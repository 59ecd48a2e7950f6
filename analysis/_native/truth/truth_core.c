/*
 * truth_core.c -- the truth-seeking pass (model and contract in truth_core.h).
 *
 * One function per event a packet can be: a counted packet, an IP ID, a
 * handshake step, an acknowledgment (cumulative, duplicate, SACK, D-SACK), a
 * window announcement, a timestamp echo (receiver-side RTT), and data (new, a
 * zero-window probe, or a repeat).
 */
#include "truth_core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Linux's minimum retransmission timeout is 200 ms; accept 10% early. */
#define RTO_MIN_NS 180000000LL
/* A direction with every byte acknowledged that sends nothing for longer than this is idle
 * as TCP itself counts it (RFC 5681 4.1 restarts the window after an RTO of idleness). */
#define IDLE_NS RTO_MIN_NS
/* Without an RTT estimate, a hole filled within this time is reordering. */
#define REORDER_DEFAULT_NS 3000000LL
/* The TSval tick of Linux and the BSDs (1 ms), and the longest among common stacks. */
#define TSVAL_TICK_NS     1000000LL
#define TSVAL_TICK_MAX_NS 2000000LL
/* A hole filled within this fraction of the RTT is reordering (1/REORDER_RTT_DIV). */
#define REORDER_RTT_DIV 2
/* The peer's latest ACK times kept per direction (a ring): enough to tell whether any ACK
 * left between a hole opening and its fill (fill_unasked), which spans a few round trips. */
#define PEER_ACKS_RECENT 32
/* Without SACK, the cumulative ACK values and the gaps of a timeout's sweep remembered
 * (timeout_sweep_gap). */
#define SWEEP_RECENT 32
/* Segments awaiting their RTT sample, and retransmissions kept for D-SACK
 * matching, per direction (ring buffers, entries). */
#define RTT_RING  4096
#define RETX_RING 512
/* A hole the capture never saw filled is the capture's, not the path's (a path loss is repaired,
 * and its repair arrives), when the capture missed the receiver's ACKs after it opened (new data
 * echoes a TSval no captured ACK carried: an ACK that covered the hole may be among them), or
 * when data kept arriving this many times the latest a repair can come (the minimum RTO, or
 * FIRST_REPAIR_RTTS round trips) after it opened: a first repair lost is repaired again within
 * another such wait. */
#define CAPTURE_TAIL_REPAIR_WAITS 2
/* Holes tracked per direction at once (entries); older ones are forgotten. */
#define MAX_HOLES 8192
/* The largest receive window TCP can announce (bytes): 65535 scaled by 2^14 (RFC 7323). An
 * ACK further above the data a capture saw cannot be of data sent before it began. */
#define MAX_WINDOW_BYTES (65535LL << 14)
/* The latest a first repair fills its hole, in round trips (the median of the newest
 * RECENT_RTT_SAMPLES receiver-side samples) and at least the minimum RTO. A
 * receiver SACKs the segments above a hole as they arrive; a Linux sender marks the hole lost
 * on that SACK (DupThresh), or once RACK's reordering window (at most the smoothed RTT) has
 * passed, on a timer that fires up to a clock tick late (4 ms at HZ=250, 10 ms at HZ=100), and
 * repairs it: the repair arrives within one round trip plus that window. A repair that was
 * lost is repaired again once a segment sent after it is SACKed, which a tail loss probe
 * (2 RTTs plus 2 ms, rounded to ticks) forces when nothing else follows, or at the RTO: on a
 * sub-millisecond path the ticks make a second repair as early as a late first one, and only
 * a repair later than an RTO shows a first one lost. */
#define FIRST_REPAIR_RTTS 3
/* Retransmission timeouts a sender backs off before it gives up (Linux's tcp_retries2). */
#define TIMEOUT_BACKOFFS_MAX 15
#define RECENT_RTT_SAMPLES   8
/* Distinct TSvals a receiver remembers for the echo that gives an RTT sample. */
#define TSVAL_RING 64
/* Distinct TSvals a direction sent, remembered with when each was first and last sent: when
 * the ACK a data segment's TSecr echoes left the receiver, and the RTT of a sender's echo
 * (entries: 1 s of history at Linux's 1 ms TSval tick). */
#define SENT_TSVAL_RING 1024
/* A sender marks a hole lost once data sent after it is SACKed and the hole's segment is
 * older than the newest round trip plus a reordering window (RACK, RFC 8985: a quarter of
 * the minimum round trip), then repairs every hole it marked before it sends new data. The
 * newest round trip exceeds the hole's own by as much as the queue grew since: at most the
 * spread of the recent round trips. New data whose TSecr echoes an ACK the receiver sent
 * longer than that after a hole opened (window plus spread, at least the floor) was sent
 * after that hole's repair: when the hole is still open as it arrives, that repair was lost,
 * on a path that delivers in order (on one that reorders, once the hole is still open one
 * reordering extent later: REORDER_LAGS_RECENT). A sender that saw reordering widens its
 * window, up to the smoothed round trip (Linux's reo_wnd_steps). The floor covers TSval clocks
 * that tick once a millisecond. */
#define KNOWN_LOST_FLOOR_NS 1000000LL
#define KNOWN_LOST_RTT_DIV  4
/* A repair lost again is repaired again the same way: the receiver SACKs new data sent after
 * the lost repair, and the sender, hearing it, marks that repair lost too (RACK: a segment sent
 * after it was delivered) and sends the next before any new data. So each time new data that
 * left after the sender heard the receiver's latest word on a hole (its TSecr echoes an ACK the
 * receiver sent, by the same wait, after the data that last showed the hole open) arrives while
 * the hole is still open, one more of its repairs was lost: at a full queue a hole's repairs are
 * dropped again and again, one per round trip. Holes scanned per new echo, oldest first (a bound
 * on the work per packet). */
#define REPAIR_GENERATIONS_SCAN 512
/* A sender that has not seen reordering marks a hole lost once the receiver reports this many
 * segments received above it (RFC 6675's DupThresh; Linux's default tp->reordering, from
 * which RACK's reordering window is 0), and repairs it before it sends new data. New data
 * that left after the sender heard that much above a hole (its TSecr echoes an ACK that
 * reported it) was sent after that hole's repair: on a path that delivers in order, the
 * repair was lost when the hole is still open as the data arrives. The TSecr says only which
 * clock tick of the receiver the sender had heard, so this holds on paths shorter than a tick,
 * where the hole's age cannot tell a second repair from a first. A sender that has seen
 * reordering waits for more (Linux raises tp->reordering and RACK's window): its first repairs
 * come after data that echoed more than DupThresh above their holes, and about as late as its
 * other first repairs. So the rule asks for more than twice the median of what the recent
 * repairs' holes had reported above them (SACKED_PAST_RECENT holes), and for a repair later
 * than the median of their holes' ages by more than half of it: a second repair waits a
 * further round trip, where a first one waits about one, and half a round trip splits the two
 * (the first repairs' waits spread in a recovery as the queue grows). Only
 * a hole of one segment: a burst lost whole (a TSO super-segment dropped at once) is repaired
 * piece by piece as the window allows, and there senders with a reordering window sent such
 * data before a first repair (seen at 5% loss with TSO, three flows and ACK loss). */
#define DUPTHRESH_SEGMENTS        3
#define SACKED_PAST_RECENT        16
#define SACKED_PAST_MEDIAN_FACTOR 2
#define SECOND_REPAIR_AGE_DIV     2
/* What a sender that has seen no reordering marks lost on hearing an ACK, read from the ACKs the
 * receiver sent: once that ACK's SACK blocks hold DupThresh segments, or while the recovery
 * such an ACK began lasts (until the cumulative ACK passes the data received when it began),
 * every hole below a SACKed segment (RACK, RFC 8985: its reordering window is 0 then; Linux's
 * tcp_rack_reo_wnd), else the holes DupThresh segments below the highest reported. It repairs
 * them before any new data, so new data whose TSecr echoes that ACK left after those repairs.
 * The second repair of a hole of one segment comes at least SECOND_REPAIR_RTTS round trips
 * after the hole opened (the first once the sender heard of the hole, the second once it heard
 * of data sent after the first), so a repair sooner than that (against the median of the
 * recent round trips) was the first, whatever came before it. A sender that saw reordering
 * waits a reordering window even then (Linux's reord_seen): that is read from the late
 * originals and the data received twice (a D-SACK that undid a recovery) seen so far. */
#define SECOND_REPAIR_RTTS 2
/* The path's reordering, read from the late originals downstream (hole fills that left before
 * the segment that revealed their hole): how long after that segment each arrived (its lag) is
 * how far the path lets data sent later overtake data sent earlier. The newest
 * REORDER_LAGS_RECENT lags are kept; their largest is the path's reordering extent. Arrival
 * order is evidence of send order only beyond that extent: new data that arrived before a
 * repair shows the repair lost only when it arrived more than the extent before it. A path
 * that never reordered has an extent of 0, and every rule reads arrival order as before. */
#define REORDER_LAGS_RECENT 8
/* What new data's TSecr showed the sender had heard, as it rose (entries: arrival time and
 * the values): read back as it stood one reordering extent before a repair. */
#define ECHOED_RECENT 64
/* Open holes, newest first, a data packet with a newer TSecr marks as echoed at most (a capture
 * whose holes outnumber this had few echoes: the rest stay undecided). */
#define ECHO_MARK_SCAN 64
/* A payload-less segment whose IP ID is this far (IDs) from the counter's highest value
 * did not come from the socket's counter: a Linux socket numbers every segment it sends
 * one by one, so a pure ACK or FIN lands within a few IDs of the data around it. */
#define IP_ID_OUT_OF_BAND_JUMP 1024

/* Which copy delivered a retransmitted range, told at the sender from what the ACKs say
 * about each first copy (the scoreboard, below). A receiver that uses timestamps discards a
 * segment whose TSval is older than the last in-order segment's by more than
 * PAWS_WINDOW_TICKS (RFC 7323 PAWS; Linux's TCP_PAWS_WINDOW) and answers with a duplicate
 * ACK, with a D-SACK only below its cumulative ACK: a first copy that reordering delays
 * behind a retransmission of lower data arrives and is dropped without a word. */
#define PAWS_WINDOW_TICKS 1
/* Downstream of the sender, the ranges the receiver's PAWS check discarded most recently
 * (entries): a repeat of one was needed, and was not lost on the path. */
#define PAWS_DISCARDS_RECENT 64
/* Downstream of the sender, the hole fills counted as repairs most recently (entries): the
 * hole's original may still arrive behind its repair (late_original_after_repair). */
#define REPAIR_FILLS_RECENT 64
/* A range covered sooner than this fraction of the lowest RTT seen, less a TSval tick (RTTs
 * from echoes are known to a tick), after its newest copy left was covered by an earlier
 * copy (RFC 4015's spirit: the response came too soon). */
#define EARLY_COVER_NUM 3
#define EARLY_COVER_DEN 4
/* RTT samples at the sender kept for the recent maximum (entries). */
#define SENDER_RECENT_RTT_SAMPLES 16
/* Reordering seen on the path: how far (send time) a segment reported as just arrived
 * trailed the latest-sent segment reported before it, as a histogram with
 * REORDER_BINS_PER_OCTAVE bins per doubling of microseconds (REORDER_BINS cover 1 us to
 * about 2^31 us). */
#define REORDER_BINS_PER_OCTAVE 4
#define REORDER_BINS            128
/* Rounds of expectation-maximisation that settle the loss rate and the reordering hidden
 * by discards together (each round moves the count by less than the one before). */
#define SCOREBOARD_EM_ROUNDS 8
/* Without SACK, segments an ACK shows the receiver held from one of k copies are counted by k
 * (held_copies_note) up to this many; beyond, the chance that all k were lost is nil, and their
 * copies are counted together */
#define HELD_COPIES_MAX 16

/* First copies whose fate awaits a receiver's word (a D-SACK, an early cover) at once, per
 * direction (entries, allocated at the first; the oldest retires early when it is full). */
#define AWAITING_RING 4096

enum copy_verdict {
    VERDICT_PENDING = 0, /* not yet told */
    VERDICT_LOST = 1,
    VERDICT_DELIVERED = 2,
    VERDICT_AWAITING = 3, /* may have arrived late and been discarded: lost unless the receiver says so */
};

/* A receiver that discards an arriving segment without a D-SACK (PAWS: a first copy that
 * arrives after a repair of data below it moved TS.Recent past its TSval, while a hole below
 * it is still open, RFC 7323 5.3 and Linux's tcp_send_dupack) answers it with an ACK that
 * repeats its previous one: the same cumulative ACK, window, SACK blocks and echo. Each such
 * repeat is one first copy that arrived: the first copies labelled lost since, or just before,
 * are matched to the repeats (oldest first). Kept per direction: the unmatched repeats and
 * the unmatched first copies labelled lost (rings, entries). A late first copy arrives within
 * a timeout (RTO_MIN_NS) and four recent round trips of leaving; a repeat or a copy older than
 * that has no partner. */
#define DISCARD_REPEATS_RECENT 64
#define LOST_COPIES_RECENT     256
/* Scoreboard entries retired by the cumulative ACK whose first copies' fates are kept: enough
 * to measure the loss over twice a long path's last flight (s550: 195 segments unreported). */
#define RETIRED_RECENT 2048
/* The first copies just below the unreported flight at the end that measure its loss rate: this
 * many times the flight's segments. */
#define UNREPORTED_WINDOW_FLIGHTS 2
#define LATE_COPY_RTTS            4

/* Without SACK, repaired segments each covered on its own by the cumulative ACK, one above the
 * other, whose repairs wait for the fate of the segment above them (fifo_chain_step): at most
 * this many (a longer run starts again from its top). */
#define IN_ORDER_CHAIN_MAX 64

/* The peer's latest ACK as read: what a repeat of it would carry. */
typedef struct {
    int64_t ack;
    int64_t sack_lo[TRUTH_MAX_SACK], sack_hi[TRUTH_MAX_SACK];
    int nsack, valid;
    uint32_t tsval, tsecr;
    uint16_t window;
} ack_seen;

/* A first copy labelled lost, awaiting a repeat that shows it arrived after all. */
typedef struct {
    int64_t lo, hi, first_ns;
} lost_copy;

/* A first copy awaiting the receiver's word. */
typedef struct {
    int64_t lo, hi, first_ns, lag_ns, age_ns;
    double lost;
    int settled;
} awaiting_copy;

/* Without SACK: a segment sent twice that the cumulative ACK covered on its own, stopping at the
 * next segment, whose first copy left before this one's repair (fifo_chain_step). */
typedef struct {
    int64_t lo, hi, first_ns, last_ns;
} held_alone;

/* The path's reordering as the sender's ACKs show it, and the first copies awaiting a word. */
typedef struct {
    int64_t hist[REORDER_BINS];                /* segments reported as just arrived that far behind */
    double unreported_hist[REORDER_BINS];      /* retired awaiting copies by lag, weighted by their
                                                  chance of delivery: reordering the reports miss */
    awaiting_copy *awaiting;                   /* ring of AWAITING_RING, allocated at the first */
    ack_seen last_ack;                         /* the peer's latest ACK, for its repeats */
    int64_t repeat_ns[DISCARD_REPEATS_RECENT]; /* repeats not yet matched (a ring) */
    int repeat_head, repeat_len;
    lost_copy lost[LOST_COPIES_RECENT]; /* first copies labelled lost, not yet matched (a ring) */
    int lost_head, lost_len;
    int64_t repeats_seen, repeats_matched; /* the peer's repeats, and those a lost copy took */
    /* the newest scoreboard entries the cumulative ACK retired, in sequence order (a ring of
     * RETIRED_RECENT): their segments, and what the ACKs told of their first copy (enum
     * first_copy_fate) */
    int32_t retired_segments[RETIRED_RECENT];
    uint8_t retired_fate[RETIRED_RECENT];
    int retired_next, retired_len;
    /* without SACK: repaired segments covered one by one, each below the next, their repairs'
     * need still open (fifo_chain_step), lowest first */
    held_alone in_order_chain[IN_ORDER_CHAIN_MAX];
    int in_order_chain_len;
} reordering;

/* One segment (or super-segment) as first sent, and what became of its first copy. */
typedef struct {
    int64_t lo, hi;
    int64_t first_ns, last_ns;        /* first and newest copy sent */
    uint32_t first_tsval, last_tsval; /* TSvals of the first and newest copy (0: none) */
    int32_t copies;
    int32_t skip;   /* covered: entries to step over to a maybe uncovered one */
    int8_t covered; /* ACKed or SACKed */
    int8_t verdict; /* enum copy_verdict, of the first copy */
} sent_segment;

typedef struct {
    int64_t lo, hi, created_ns, reveal_id;
    uint32_t reveal_tsval;
    int has_ts;
    int64_t opened_bytes; /* its size when it opened */
    /* a repair passed here within a round trip before it opened, and may have left after the
     * hole's data (fill_unasked): its ACK can have had the hole's data marked lost (RACK) */
    int after_repair;
    /* when new data arrived that the sender sent after this hole's repair (-1: none yet):
     * the hole still open one reordering extent later shows that repair lost */
    int64_t known_lost_ns;
    /* when the receiver last showed the sender this hole open after a repair was due (the
     * hole's opening, then the arrival of new data sent after its latest repair), and how
     * many of its repairs new data has overtaken since (REPAIR_GENERATIONS_SCAN) */
    int64_t generation_ns, repairs_overtaken;
    /* since when it is the lowest hole open (-1: not yet): without SACK a sender repairs the
     * holes one partial ACK at a time, each once those below it are filled (RFC 6582) */
    int64_t lowest_ns;
    /* the peer's duplicate ACKs at it while it is the lowest, and when the DupThresh-th left
     * (-1: not yet): without SACK a sender knows of a hole only from those */
    int64_t dupacks, dupthresh_ns;
    /* the newest TSval the peer had sent when the sender can first have heard of it (its
     * opening; after a repair, the arrival of the data just below it) (opened_echo_known: one
     * was seen), and when data first arrived whose TSecr echoes that or a newer one (-1: not
     * yet): the first data that can have left after the sender heard of the hole
     * (repair_left_before_heard) */
    uint32_t opened_echo;
    int opened_echo_known;
    int64_t echoed_after_ns;
    /* without SACK, whether the sender had left any recovery below it when it opened
     * (newreno_open_below): its own DupThresh duplicate ACKs then have it resent at once */
    int open_below;
    /* without SACK, when a repair last filled its front (0: never): the partial ACK that repair
     * draws tells the sender of the next segment (rest_of_hole_due) */
    int64_t front_filled_ns;
    /* from when a segment the sender sent after the hole's can have arrived here and its ACK
     * told the sender of the hole: its opening, or after a repair that can have left after the
     * hole's data (after_repair), the arrival of the data just below it (RACK) */
    int64_t heard_from_ns;
} hole;
typedef struct {
    int64_t end, ts_ns;
} rtt_entry;
/* Without SACK, a timeout's go-back-N sweep passing here (timeout_sweep_gap): the end of its
 * highest repeat and when its latest came (next -1: no sweep under way), the peer's latest
 * cumulative ACKs and the sweep's gaps counted lost (rings of SWEEP_RECENT). */
typedef struct {
    int64_t next, ns;
    int64_t acks[SWEEP_RECENT], gap_lo[SWEEP_RECENT], gap_hi[SWEEP_RECENT];
    int acks_next, acks_len, gaps_next, gaps_len;
} sweep_state;
/* A hole fill counted as a repair: its range, the segments it counted lost (until the hole's
 * original shows up), the TSval of the data that revealed the hole and its own. */
typedef struct {
    int64_t lo, hi, segments_lost;
    uint32_t reveal_tsval, fill_tsval;
} repair_fill;
/* TSvals one direction sent, oldest first, each once (a ring allocated on first use). */
typedef struct {
    uint32_t tsval;
    int64_t first_ns, last_ns;
    int64_t reported_hi; /* the peer data its first packet reported received (ACK, SACK) */
    int64_t marked_hi;   /* the holes below this it reported, a sender marks lost (SECOND_REPAIR_RTTS) */
} sent_tsval;
typedef struct {
    sent_tsval *at;
    int head, len;
} sent_tsval_ring;
typedef struct {
    int64_t lo, hi, pkt;
    int spurious, downstream;
    int64_t spurious_segs; /* of its segments, those shown not needed (all: spurious) */
    int64_t dsack_bytes;   /* of its bytes, those D-SACKs reported */
} retx_entry;

typedef struct {
    int have_ref;   /* sequence space anchored */
    int64_t base;   /* first data sequence number (unwrapped) */
    int64_t hi_end; /* highest sequence end sent/seen (data only) */
    int64_t last_tx_ns;
    int64_t last_tx_len; /* payload bytes of the last data packet */
    /* what the peer's ACKs said about this direction's data */
    int have_una;
    int64_t snd_una, last_adv_ns;
    int64_t dupacks;   /* duplicate ACKs since the cumulative ACK last advanced */
    int sack_evidence; /* SACK blocks seen since the last advance */
    int nsack;
    int64_t sack_lo[TRUTH_MAX_SACK], sack_hi[TRUTH_MAX_SACK];
    uint32_t peer_window; /* raw window of the peer's latest packet */
    int peer_window_known;
    /* recovery episodes */
    int recovery_kind; /* 0 none, TRUTH_KIND_RETRANS_FAST or TRUTH_KIND_RETRANS_RTO */
    int64_t recovery_point;
    int64_t karn_hi; /* ACKs up to here cover retransmitted data: no RTT sample */
    /* holes (receiver and in-path modes) */
    hole *holes;
    int nholes, cap_holes;
    /* the highest start of a hole a retransmission filled: a sender repairs holes in
     * sequence order, so a hole still open below it had its retransmission lost (-1: none) */
    int64_t retx_fill_lo;
    uint32_t retx_fill_tsval;
    int retx_fill_has_ts; /* that repair's TSval: a lower repair sent
                             no later arrived late, it was not lost */
    /* RTT at the sender */
    rtt_entry *rtt;
    int rtt_head, rtt_len;
    retx_entry retx[RETX_RING];
    int retx_head, retx_len;
    int64_t min_rtt_ns;
    /* the newest receiver-side RTT samples (ns): what a repair's wait is measured against */
    int64_t recent_rtt_ns[RECENT_RTT_SAMPLES];
    int recent_rtt_next, recent_rtt_len;
    int64_t last_repair_end; /* where it ended */
    int last_repair_lost;    /* it showed an earlier repair lost */
    uint32_t last_repair_tsval;
    int last_repair_has_ts; /* its TSval (repair_sweep_continues) */
    /* the latest repair read as a first one, which the sender's sweep continues above
     * (repair_left_unheard): where it ended (-1: none) and when it arrived */
    int64_t sweep_end, sweep_ns;
    /* the last data was a timeout's resend (resent_by_timeout): the loss probe sent before
     * that timeout was lost, and the next data tells where (timeout_probe_lost), or that it
     * was no resend (timeout_resend_disproved); the packet (-1: none) */
    int timeout_probe_pending;
    int64_t timeout_resend_i;
    /* holes below this sequence number were still open when new data sent after their
     * repair arrived: their first repair was lost (-1: none) */
    int64_t repair_lost_below;
    /* the oldest generation_ns among the holes repairs_overtaken scans (-1: none): no hole is
     * due before new data echoes an ACK that long after it */
    int64_t generation_due_ns;
    /* without SACK: when the peer last sent the DupThresh-th duplicate ACK at the lowest hole
     * (-1: never), when the first repair after it arrived (-1: none yet), and whether new data
     * arrived after that repair (newreno_open_below) */
    int64_t dupthresh_last_ns, repair_after_dupthresh_ns;
    int new_after_recovery_repair;
    /* when data last came here that a retransmission timeout sent (a repeat after a silence, or
     * a fill of a hole, of the minimum RTO or more; -1: never), and when the first new data
     * after it came (0: not yet; -1: no timeout): without SACK a timeout's resends, and F-RTO's
     * new data before them, need no duplicate ACKs (fill_unheard_without_sack) */
    int64_t timeout_resend_ns, timeout_new_ns;
    /* when the cumulative ACK last moved on (-1: never), whether to the end of a fill read as a
     * late original (not a partial ACK of a recovery), and the end of the latest such fill
     * (-1: none) (fill_unheard_without_sack) */
    int64_t una_moved_ns, late_fill_end;
    int una_moved_by_late;
    /* without SACK, a timeout's go-back-N sweep passing here (allocated on the peer's first
     * ACK of such a connection; NULL: none) */
    sweep_state *sweep;
    /* this direction's own TSvals, every packet's: when its ACKs left */
    sent_tsval_ring tsvals_sent;
    /* the highest sequence the peer reported received (cumulative ACK or SACK block), and the
     * highest of that which new data's TSecr showed the sender had heard (-1: none) */
    int64_t reported_hi, echoed_reported_hi;
    /* without a handshake: the highest data the peer had reported received (ACK, SACK) by the
     * first ACK of data this capture saw; below it, the data preceded the capture
     * (data_before_capture; -1: no such ACK yet) */
    int64_t before_capture_hi;
    /* the holes below this the peer's ACKs reported are those a sender marks lost on hearing
     * them, the highest of that which new data's TSecr showed the sender had heard, and where
     * the recovery those ACKs began ends (SECOND_REPAIR_RTTS; -1: none) */
    int64_t marked_hi, echoed_marked_hi, recovery_hi;
    /* the lags of the newest late originals (REORDER_LAGS_RECENT, a ring), and whether the
     * sender can have seen one: a receiver ACK left between its hole opening and its arrival
     * (the ACK SACKed data above it, so its late ACK showed the sender reordering, which
     * Linux remembers for the connection: tp->reord_seen) */
    int64_t reorder_lag_ns[REORDER_LAGS_RECENT];
    int reorder_lag_next, reorder_lag_len;
    int sender_saw_reordering;
    /* the newest TSecr this direction's data carried so far (data_tsecr_known: one was seen) */
    uint32_t data_tsecr;
    int data_tsecr_known;
    /* echoed_reported_hi and echoed_marked_hi as each rise arrived (ECHOED_RECENT, a ring) */
    int64_t echoed_ns[ECHOED_RECENT], echoed_reported_at[ECHOED_RECENT], echoed_marked_at[ECHOED_RECENT];
    int echoed_next, echoed_len;
    /* bytes reported above each recently repaired hole when its repair arrived, and how long
     * the hole had been open (a ring) */
    int64_t sacked_past[SACKED_PAST_RECENT], repair_age_ns[SACKED_PAST_RECENT];
    int sacked_past_next, sacked_past_len;
    /* TSval -> first time sent, for the peer's echo (ring of distinct TSvals) */
    uint32_t tsv[TSVAL_RING];
    int64_t tsv_ns[TSVAL_RING];
    int tsv_head, tsv_len;
    uint32_t tsv_last;
    int tsv_last_valid;
    /* IP ID unwrapping */
    int have_id;
    int64_t id_hi;
    int64_t last_id;
    int64_t mss;
    /* sent segments not yet cumulatively ACKed, in sequence order (sb[sb_first..sb_len)) */
    sent_segment *sb;
    int64_t sb_first, sb_len, sb_cap;
    int64_t sb_verdict_next; /* first segment whose first copy no TSecr has passed yet */
    int64_t sb_una;          /* cumulative ACK the scoreboard has applied */
    reordering *ro;          /* allocated with the scoreboard */
    int64_t reorder_samples; /* segments reported as just arrived, reordered or not */
    int64_t first_copy_verdicts, first_copy_lost;
    int64_t covered_sent_max_ns; /* latest first-copy send time of a segment reported */
    int sack_read;               /* a SACK block of the peer was read (bare_dupack_reports) */
    int64_t dupack_una;          /* the cumulative ACK the bare duplicate ACKs repeat ... */
    int64_t dupack_next;         /* ... and the segment the next one reports arrived */
    uint32_t echo_last;
    int echo_valid;                   /* newest TSecr the peer echoed */
    sent_tsval_ring data_tsvals_sent; /* this direction's TSvals on data, for the RTT of an echo */
    int64_t sender_rtt_min_ns;
    int64_t sender_rtt_recent_ns[SENDER_RECENT_RTT_SAMPLES];
    int sender_rtt_next, sender_rtt_len;
    int uses_ts;                     /* this direction's data carries timestamps */
    int awaiting_head, awaiting_len; /* ring in ro->awaiting */
    double inferred_lost;            /* awaiting copies retired: their summed loss probability */
    double lost_inferred_correction; /* lost count less the retransmissions labelled needed */
    double lost_inferred_variance;   /* of that count (segments squared) */
    int64_t dsack_more_segments;     /* retransmissions a D-SACK showed beyond its first */
    /* without SACK: segments a cumulative ACK covered that the receiver held from one of k copies,
     * no ACK telling which (held_copies_note), by k (held_from_one_of[k], segments), and the
     * retransmissions among those copies, marked not needed (segments) */
    int64_t held_from_one_of[HELD_COPIES_MAX + 1];
    int64_t held_copies_beyond; /* copies of such segments of more than HELD_COPIES_MAX copies */
    int64_t held_retransmissions;
    /* without SACK or timestamps: first copies resent with the window, whose fate no ACK told
     * (resent_with_window) */
    int64_t resent_untold_first_copies;
    /* without SACK: repairs of the segment at the cumulative ACK whose fate the ACK told (the
     * newest filled it, every earlier one was lost: fill_repairs_note), and of those, the lost */
    int64_t fill_repairs, fill_repairs_lost;
    /* when the newest repeat of the data at the cumulative ACK passed (-1: none since the ACK
     * last moved): the fill repeats_behind_lost_repair_passed measures against */
    int64_t repeat_at_una_ns;
    /* a repair filled a hole here at the cumulative ACK since it last moved: the receiver's
     * ACK stands at data lost before this capture point (una_lost_before_here) */
    int una_hole_filled_here;
    uint16_t ack_window_last;
    int ack_window_valid; /* the window of the peer's last ACK */
    /* downstream: the receiver's ts_recent as this capture infers it (the newest TSval of data
     * that reached its left edge), and the ranges its PAWS check discarded (a ring) */
    uint32_t paws_tsval;
    int paws_valid;
    /* downstream: the capture missed the peer's ACKs (CAPTURE_TAIL): the latest new data whose
     * TSecr echoes a TSval newer than any the capture saw from the peer (-1: none), the bytes
     * the newest echo of a captured ACK showed in flight past what that ACK reported (-1:
     * unknown), and what the unseen ACKs reported received at least, estimated from those
     * two, with when the ACK left (-1: none) */
    int64_t unseen_echo_ns, echo_flight_bytes, unseen_echo_reported, unseen_echo_reported_ns;
    /* downstream: when the latest repair (a repeat not reordered) passed (-1: none), its TSval,
     * and the TSval of the data that last raised the highest sequence seen */
    int64_t repair_seen_ns;
    uint32_t repair_seen_tsval, hi_end_tsval;
    int repair_seen_has_ts, hi_end_has_ts;
    /* downstream: when the data that last raised the highest sequence seen arrived */
    int64_t hi_end_ns;
    /* when the capture saw the peer's latest ACKs, distinct times in order (a ring) */
    int64_t peer_acks_ns[PEER_ACKS_RECENT];
    int peer_acks_next, peer_acks_len;
    int64_t paws_lo[PAWS_DISCARDS_RECENT], paws_hi[PAWS_DISCARDS_RECENT];
    uint8_t paws_open[PAWS_DISCARDS_RECENT]; /* the receiver still lacks it */
    int paws_next, paws_len;
    repair_fill repair_fills[REPAIR_FILLS_RECENT];
    int repair_fills_next, repair_fills_len;
    /* downstream: the repairs the sender can have sent before a timeout, from the data that
     * arrived since the first of the open holes opened (on_data_above_holes), segments */
    int64_t repair_budget_segments;
    /* the repairs since the latest timeout's resend: the budget that sweep began with and the
     * segments it filled (-1: no sweep) */
    int64_t timer_sweep_budget, timer_sweep_filled;
} direction_state;

typedef struct {
    const truth_input *in;
    truth_output *out;
    direction_state *dirs;
    int out_of_memory;
} pass;

static inline int64_t unwrap32(int64_t ref, uint32_t raw) { return ref + (int32_t)(raw - (uint32_t)ref); }

static int64_t segments_of(int64_t len, int64_t mss) {
    if (len <= 0) return 0;
    if (mss <= 0) return 1;
    return (len + mss - 1) / mss;
}

static int64_t *stats_of(const pass *ps, int64_t d) { return ps->out->stats + d * S_N_FIELDS; }

/* ---- holes ---- */

/* The bytes of [lo, hi) inside direction s's open holes. */
static int64_t hole_bytes_within(const direction_state *s, int64_t lo, int64_t hi) {
    int64_t n = 0;
    for (int j = 0; j < s->nholes && s->holes[j].lo < hi; j++) {
        int64_t L = s->holes[j].lo > lo ? s->holes[j].lo : lo, R = s->holes[j].hi < hi ? s->holes[j].hi : hi;
        if (R > L) n += R - L;
    }
    return n;
}

/* Remove [lo, hi) from the hole list; returns bytes removed, and the first
 * overlapping hole's copy in *first (when any). */
static int64_t holes_cut(pass *ps, direction_state *s, int64_t lo, int64_t hi, hole *first, int *found) {
    int64_t removed = 0;
    *found = 0;
    for (int i = 0; i < s->nholes; i++) {
        hole *h = &s->holes[i];
        if (h->hi <= lo) continue;
        if (h->lo >= hi) break;
        if (!*found) {
            *first = *h;
            *found = 1;
        }
        int64_t olo = h->lo > lo ? h->lo : lo, ohi = h->hi < hi ? h->hi : hi;
        removed += ohi - olo;
        if (olo == h->lo && ohi == h->hi) { /* whole hole */
            memmove(h, h + 1, sizeof(hole) * (size_t)(s->nholes - i - 1));
            s->nholes--;
            i--;
        } else if (olo == h->lo) {
            h->lo = ohi;
        } else if (ohi == h->hi) {
            h->hi = olo;
        } else { /* split in two */
            if (s->nholes == s->cap_holes) {
                int nc = s->cap_holes ? s->cap_holes * 2 : 16;
                hole *nh = realloc(s->holes, sizeof(hole) * (size_t)nc);
                if (!nh) {
                    ps->out_of_memory = 1;
                    return removed;
                }
                s->holes = nh;
                s->cap_holes = nc;
                h = &s->holes[i];
            }
            memmove(h + 1, h, sizeof(hole) * (size_t)(s->nholes - i));
            s->nholes++;
            s->holes[i].hi = olo;
            s->holes[i + 1].lo = ohi;
            i++;
        }
    }
    return removed;
}

static void holes_append(pass *ps, direction_state *s, hole h) {
    if (s->nholes == MAX_HOLES) { /* forget the oldest */
        memmove(s->holes, s->holes + 1, sizeof(hole) * (MAX_HOLES - 1));
        s->nholes--;
        if (s->holes[0].lowest_ns < 0) s->holes[0].lowest_ns = h.created_ns;
    }
    if (s->nholes == s->cap_holes) {
        int nc = s->cap_holes ? s->cap_holes * 2 : 16;
        hole *nh = realloc(s->holes, sizeof(hole) * (size_t)nc);
        if (!nh) {
            ps->out_of_memory = 1;
            return;
        }
        s->holes = nh;
        s->cap_holes = nc;
    }
    s->holes[s->nholes++] = h;
}

/* ---- events ---- */

static void on_packet(pass *ps, int64_t d, int64_t i) {
    int64_t *S = stats_of(ps, d);
    uint8_t ttl = ps->in->ttl[i];
    S[S_PACKETS]++;
    if (ttl < S[S_TTL_MIN]) S[S_TTL_MIN] = ttl;
    if (ttl > S[S_TTL_MAX]) S[S_TTL_MAX] = ttl;
}

static int ip_id_out_of_band(int have_id, int64_t id_hi, uint16_t raw, int64_t payload_len) {
    if (payload_len > 0) return 0;
    if (!have_id) return raw == 0;
    int64_t delta = (int16_t)(uint16_t)(raw - (uint16_t)id_hi);
    return delta > IP_ID_OUT_OF_BAND_JUMP || delta < -IP_ID_OUT_OF_BAND_JUMP;
}

/* IP ID: unwrap the 16-bit counter; SYNs may carry 0 before it starts, and segments
 * without payload that the kernel sends outside the socket (RSTs, TIME-WAIT ACKs, from a
 * per-namespace control socket) carry 0 or an unrelated ID: keep those out of the
 * per-socket sequence. A super-segment (TSO/GSO at the sender, GRO/LRO at the receiver)
 * of k segments carries the first of the k consecutive IDs its segments had. */
static void on_ip_id(pass *ps, int64_t d, int64_t i) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    int64_t *S = stats_of(ps, d);
    int64_t len = in->payload_len[i];
    if (!(in->decode_flags[i] & TRUTH_DECODE_IP_ID_VALID) || (in->tcp_flags[i] & TRUTH_TCP_SYN) ||
        ip_id_out_of_band(s->have_id, s->id_hi, (uint16_t)in->ip_id[i], len))
        return;
    uint16_t raw = (uint16_t)in->ip_id[i];
    int64_t last = segments_of(len, s->mss) - 1;
    int64_t v;
    if (last < 0) last = 0;
    if (raw == 0) S[S_ID_ZERO]++;
    if (!s->have_id) {
        v = raw;
        s->have_id = 1;
        s->id_hi = v + last;
    } else {
        v = s->id_hi + (int16_t)(uint16_t)(raw - (uint16_t)s->id_hi);
        S[S_ID_STEPS]++;
        if (v == s->last_id + 1) S[S_ID_STEP1]++;
        if (v > s->last_id) S[S_ID_FORWARD_STEPS]++;
        if (v + last > s->id_hi) s->id_hi = v + last;
    }
    s->last_id = v + last;
    ps->out->id64[i] = v;
}

static void on_handshake(pass *ps, int64_t d, int64_t i) {
    int64_t *S = stats_of(ps, d), *P = stats_of(ps, d ^ 1);
    uint16_t f = ps->in->tcp_flags[i];
    int64_t now = ps->in->ts_ns[i];
    if ((f & TRUTH_TCP_SYN) && !(f & TRUTH_TCP_ACK) && S[S_SYN_TS] < 0) S[S_SYN_TS] = now;
    if ((f & TRUTH_TCP_SYN) && (f & TRUTH_TCP_ACK) && S[S_SYNACK_TS] < 0) S[S_SYNACK_TS] = now;
    if (!(f & (TRUTH_TCP_SYN | TRUTH_TCP_RST)) && (f & TRUTH_TCP_ACK) && S[S_FIRST_ACK_TS] < 0 && P[S_SYNACK_TS] >= 0)
        S[S_FIRST_ACK_TS] = now;
}

/* The direction's sequence space starts at its SYN, or at its first data or ACK. */
static void anchor_sequence(pass *ps, int64_t d, int64_t i) {
    direction_state *s = &ps->dirs[d];
    uint16_t f = ps->in->tcp_flags[i];
    if (s->have_ref) return;
    if (f & TRUTH_TCP_SYN) {
        s->base = (int64_t)ps->in->seq[i] + 1;
    } else if (ps->in->payload_len[i] > 0 || (f & TRUTH_TCP_ACK)) {
        s->base = ps->in->seq[i];
    } else {
        return;
    }
    s->have_ref = 1;
    s->hi_end = s->base;
    s->snd_una = s->base;
}

/* First pass: whether data jumps forward (a hole) or repeats, as a sender-side pass
 * would count it, and the windows that mark zero-window probes. */
static void on_evidence(pass *ps, int64_t d, int64_t i) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d], *p = &ps->dirs[d ^ 1];
    int64_t *S = stats_of(ps, d);
    uint16_t f = in->tcp_flags[i];
    int64_t len = in->payload_len[i];
    if (!(f & (TRUTH_TCP_SYN | TRUTH_TCP_RST))) {
        p->peer_window = in->window[i];
        p->peer_window_known = 1;
    }
    if (len <= 0 || !s->have_ref) return;
    int64_t lo = unwrap32(s->hi_end, in->seq[i]) + ((f & TRUTH_TCP_SYN) ? 1 : 0);
    int64_t hi = lo + len;
    S[S_DATA_PACKETS]++;
    if (lo > s->hi_end)
        S[S_FORWARD_JUMPS]++;
    else if (lo < s->hi_end && !(len == 1 && hi == s->hi_end && s->peer_window_known && s->peer_window == 0))
        S[S_RETRANS] += segments_of(len, s->mss);
    if (hi > s->hi_end) s->hi_end = hi;
}

static void repeats_behind_lost_repair_passed(pass *ps, int64_t d, int64_t old_una, int64_t a);

/* The cumulative ACK advanced: capture gaps, an RTT sample at the sender, recovery end. */
static void on_ack_advance(pass *ps, int64_t d, int64_t i, int64_t a, int64_t a_data) {
    direction_state *p = &ps->dirs[d ^ 1];
    int64_t *P = stats_of(ps, d ^ 1);
    int64_t now = ps->in->ts_ns[i];
    int first = !p->have_una;
    p->have_una = 1;
    if (!first && a_data > p->snd_una && p->nholes > 0) {
        /* data the peer acknowledges that the capture never saw */
        hole first_hole;
        int found;
        int64_t gap = holes_cut(ps, p, p->snd_una, a_data, &first_hole, &found);
        if (gap > 0) {
            P[S_CAPTURE_GAP_BYTES] += gap;
            P[S_CAPTURE_GAPS] += segments_of(gap, p->mss);
        }
    }
    /* RTT sample: the newest segment this ACK covers (Karn: none while the covered range
     * holds retransmitted data) */
    int64_t sample_ts = -1;
    while (p->rtt_len > 0) {
        rtt_entry *e = &p->rtt[p->rtt_head];
        if (e->end > a_data) break;
        sample_ts = e->ts_ns;
        p->rtt_head = (p->rtt_head + 1) % RTT_RING;
        p->rtt_len--;
    }
    if (!first && sample_ts >= 0 && p->snd_una >= p->karn_hi && ps->in->mode[d ^ 1] == TRUTH_MODE_SENDER) {
        int64_t r = now - sample_ts;
        if (r >= 0) {
            ps->out->rtt_us[i] = (double)r / 1000.0;
            ps->out->rtt_direction[i] = (int32_t)(d ^ 1);
            if (p->min_rtt_ns < 0 || r < p->min_rtt_ns) p->min_rtt_ns = r;
        }
    }
    /* the first data the peer acknowledged: when delivery began */
    if (!first && a_data > p->base && P[S_FIRST_ACKED_TS] < 0) P[S_FIRST_ACKED_TS] = now;
    /* ... and the last time it acknowledged more data (not the FIN alone: the FIN's ACK of a
     * connection closed after its data comes when the peer's application closes, later): where
     * delivery ended */
    if (!first && a_data > p->base && a_data > p->snd_una) P[S_LAST_ACKED_TS] = now;
    /* a repeat of the data at the old cumulative ACK passed since it last moved: the fill */
    if (!first && a_data > p->snd_una && p->repeat_at_una_ns >= 0)
        repeats_behind_lost_repair_passed(ps, d ^ 1, p->snd_una, a_data);
    if (a_data > p->snd_una) {
        p->una_moved_ns = now;
        p->una_moved_by_late = a_data == p->late_fill_end;
        p->repeat_at_una_ns = -1;
        p->una_hole_filled_here = 0;
    }
    if (a > p->snd_una || first) p->snd_una = a_data;
    p->dupacks = 0;
    p->sack_evidence = 0;
    p->last_adv_ns = now;
    if (p->recovery_kind && p->snd_una >= p->recovery_point) p->recovery_kind = 0;
}

/* Whether direction d's connection did not negotiate SACK (its SYNs say so): its sender knows of
 * the lowest hole only, learns of the others one partial ACK at a time (RFC 6582), and has no
 * loss probe nor RACK. */
static int sack_off(const truth_input *in, int64_t d) { return in->sack_negotiated[d] == TRUTH_SACK_OFF; }

/* SACK blocks: D-SACK when the first block lies below the cumulative ACK or inside the
 * second block (RFC 2883); a D-SACK marks the newest retransmission inside it as not
 * needed (in path: not lost downstream either, the receiver had it twice), and the next
 * newest below that one, down the block: a receiver that coalesced several repeats (GRO)
 * reports them in one block. */
/* The SACK blocks of packet i about direction d's data, unwrapped into L/R; returns their
 * count, and in *dsack whether the first is a D-SACK (RFC 2883: below the cumulative ACK a,
 * or inside the second block). */
static int sack_blocks(const pass *ps, int64_t d, int64_t i, int64_t a, int64_t L[TRUTH_MAX_SACK],
                       int64_t R[TRUTH_MAX_SACK], int *dsack) {
    const truth_input *in = ps->in;
    const direction_state *p = &ps->dirs[d];
    int nb = in->sack_count[i] > TRUTH_MAX_SACK ? TRUTH_MAX_SACK : in->sack_count[i];
    for (int j = 0; j < nb; j++) {
        L[j] = unwrap32(p->hi_end, in->sack_left[i * TRUTH_MAX_SACK + j]);
        R[j] = unwrap32(p->hi_end, in->sack_right[i * TRUTH_MAX_SACK + j]);
    }
    *dsack = nb > 0 && R[0] > L[0] && (R[0] <= a || (nb > 1 && L[1] <= L[0] && R[0] <= R[1]));
    return nb;
}

/* Of retransmission e (direction d), spurious_segs of its segments are now shown not needed
 * (capped at all of them: then it is spurious); the stats follow, and in path those were not
 * lost downstream either. Returns the segments newly shown. */
static int64_t mark_not_needed(pass *ps, int64_t d, retx_entry *e, int64_t spurious_segs) {
    int64_t *S = stats_of(ps, d);
    int64_t segs = segments_of(e->hi - e->lo, ps->dirs[d].mss);
    if (spurious_segs > segs) spurious_segs = segs;
    int64_t added = spurious_segs - e->spurious_segs;
    if (added <= 0) return 0;
    e->spurious_segs = spurious_segs;
    S[S_SPURIOUS] += added;
    if (e->downstream) S[S_DOWNSTREAM_RETRANS] -= added;
    if (spurious_segs == segs) {
        e->spurious = 1;
        e->downstream = 0;
        ps->out->kind[e->pkt] = TRUTH_KIND_SPURIOUS;
    }
    return added;
}

/* In path without SACK, the cumulative ACK moved from old_una to a past repeats that passed here
 * before the newest copy of the data at old_una did (the fill that moved it). The path here to the
 * receiver keeps order, so those repeats reached the receiver before the fill, while the ACK stood
 * at the hole: the window resent behind a lost repair (resent_with_window at the sender).
 * Had a repeat's earlier copy been lost downstream, the receiver needed it; without SACK nothing
 * says so, and it is no more likely than any loss downstream: the repeats count as not needed,
 * not lost downstream. */
static void repeats_behind_lost_repair_passed(pass *ps, int64_t d, int64_t old_una, int64_t a) {
    direction_state *s = &ps->dirs[d];
    if (ps->in->mode[d] != TRUTH_MODE_IN_PATH || !sack_off(ps->in, d)) return;
    int64_t fill_ns = s->repeat_at_una_ns;
    for (int q = 0; q < s->retx_len; q++) {
        retx_entry *r = &s->retx[(s->retx_head + q) % RETX_RING];
        if (r->downstream && r->lo > old_una && r->hi <= a && ps->in->ts_ns[r->pkt] < fill_ns)
            mark_not_needed(ps, d, r, INT64_MAX);
    }
}

/* In path without SACK: whether the peer's cumulative ACK stands at data this capture never saw
 * pass before (a hole here at it, open or filled by a repair since the ACK last moved): lost
 * before here. The receiver cannot acknowledge anything above it until its repair arrives, so
 * a repeat of data above it that passed here tells nothing of a loss downstream: the sender
 * resends the window behind the ACK (go-back-N after a timeout; Reno's head segments marked lost
 * from the duplicate-ACK count) without knowing what arrived. Its earlier copy passed here, and
 * nothing says the receiver lacked it (seen, router -i any: 82 such repeats of data the receiver
 * held, counted as lost past the router, which dropped nothing more). */
static int una_lost_before_here(const pass *ps, int64_t d) {
    const direction_state *s = &ps->dirs[d];
    if (ps->in->mode[d] != TRUTH_MODE_IN_PATH || !sack_off(ps->in, d) || !s->have_una) return 0;
    if (s->una_hole_filled_here) return 1;
    return s->nholes > 0 && s->holes[0].lo <= s->snd_una && s->snd_una < s->holes[0].hi;
}

static void on_sack(pass *ps, int64_t d, int64_t i, int64_t a) {
    const truth_input *in = ps->in;
    direction_state *p = &ps->dirs[d ^ 1];
    int64_t *P = stats_of(ps, d ^ 1);
    int64_t L[TRUTH_MAX_SACK], R[TRUTH_MAX_SACK];
    int first_regular = 0;
    int nb = sack_blocks(ps, d ^ 1, i, a, L, R, &first_regular);
    if (first_regular) {
        P[S_DSACK_BLOCKS]++;
        int8_t m = in->mode[d ^ 1];
        if (m == TRUTH_MODE_SENDER || m == TRUTH_MODE_IN_PATH) {
            /* newest first, each byte of the block once: the repeats the receiver coalesced
             * (GRO) into the one duplicate it reports were all not needed; and a repeat sent
             * as one super-segment (TSO) and reported a segment at a time, once every segment
             * of it was reported */
            int64_t marked_lo = R[0]; /* the block's bytes from here up are accounted for */
            int64_t shown = 0;
            for (int q = 0; q < p->retx_len && marked_lo > L[0]; q++) {
                retx_entry *e = &p->retx[(p->retx_head + p->retx_len - 1 - q) % RETX_RING];
                int64_t lo = e->lo > L[0] ? e->lo : L[0], hi = e->hi < marked_lo ? e->hi : marked_lo;
                if (e->spurious || hi <= lo) continue;
                e->dsack_bytes += hi - lo;
                int64_t whole = e->dsack_bytes >= e->hi - e->lo;
                shown += mark_not_needed(ps, d ^ 1, e, whole ? INT64_MAX : p->mss > 0 ? e->dsack_bytes / p->mss : 0);
                marked_lo = lo;
            }
            if (shown > 1) p->dsack_more_segments += shown - 1;
        }
    }
    if (nb > 0) {
        int nkeep = 0;
        for (int j = first_regular; j < nb; j++) {
            if (R[j] <= L[j]) continue;
            P[S_SACK_BLOCKS]++;
            p->sack_lo[nkeep] = L[j];
            p->sack_hi[nkeep] = R[j];
            nkeep++;
        }
        p->nsack = nkeep;
        if (nkeep > 0) p->sack_evidence = 1;
    } else {
        p->nsack = 0;
    }
    int64_t reported = a < p->hi_end ? a : p->hi_end;
    for (int j = 0; j < p->nsack; j++)
        if (p->sack_hi[j] > reported) reported = p->sack_hi[j];
    if (reported > p->reported_hi) p->reported_hi = reported;
    /* what a sender that saw no reordering marks lost on hearing this (SECOND_REPAIR_RTTS) */
    int64_t sacked = 0;
    for (int j = 0; j < p->nsack; j++)
        if (p->sack_hi[j] > a) sacked += p->sack_hi[j] - (p->sack_lo[j] > a ? p->sack_lo[j] : a);
    int mss_known = p->mss > 0 && p->mss < INT64_MAX / DUPTHRESH_SEGMENTS;
    int dupthresh = mss_known && sacked >= DUPTHRESH_SEGMENTS * p->mss;
    int in_recovery = a < p->recovery_hi;
    if (dupthresh && !in_recovery) p->recovery_hi = p->hi_end;
    int64_t marked = -1;
    if (dupthresh || in_recovery)
        marked = reported;
    else if (mss_known)
        marked = reported - DUPTHRESH_SEGMENTS * p->mss;
    if (marked > p->marked_hi) p->marked_hi = marked;
}

/* ---- which copy delivered: the sender's scoreboard ----
 *
 * Every first copy gets a verdict at the first moment the ACKs could no longer report it:
 * when its range is covered (by it, or by a later copy), or when the receiver echoes a TSval
 * newer than its own by more than the PAWS window while it is still unreported (from then
 * on it would be discarded on arrival, with a duplicate ACK and no D-SACK). Covered by
 * itself: delivered. Covered by a later copy sooner than that copy could make the trip
 * (RFC 4015's spirit): delivered. Otherwise it was lost, or it was still on its way:
 * reordered behind segments sent after it. How far behind (lag: how much later the
 * latest-sent segment already reported left) tells which, against the path's own
 * reordering (how often a segment reported as just arrived trailed one sent that much
 * later) and loss (how often a first copy was lost): a path that never reordered that far
 * lost it; else it awaits the receiver's word (a D-SACK, an early cover) and, without one,
 * counts as lost with the probability those rates give (the more likely fate labels its
 * retransmissions). Copies not needed can be lost too: they add the first-copy loss rate
 * each. Both make the inferred part of the lost count (S_LOST_INFERRED_MILLI). */

static int64_t sb_index(const direction_state *s, int64_t lo) {
    /* first entry with hi > lo (entries are in sequence order) */
    int64_t a = s->sb_first, b = s->sb_len;
    while (a < b) {
        int64_t m = a + (b - a) / 2;
        if (s->sb[m].hi <= lo)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* The first entry at or after k not yet covered (runs of covered entries are stepped over,
 * and the steps shortened for the next search: SACK blocks are read again at every ACK). */
static int64_t sb_uncovered(direction_state *s, int64_t k) {
    int64_t t = k;
    while (t < s->sb_len && s->sb[t].covered) t += s->sb[t].skip;
    if (t > s->sb_len) t = s->sb_len;
    while (k < t && s->sb[k].covered) {
        int64_t next = k + s->sb[k].skip;
        if (t - k < INT32_MAX) s->sb[k].skip = (int32_t)(t - k);
        k = next;
    }
    return t;
}

/* A TSval sent at `now`: a newer value joins the ring, the newest again moves its last send
 * time, an older one (a clock that fell) is not kept, so the ring stays in rising order.
 * -1: out of memory. */
static int sent_tsval_note(sent_tsval_ring *r, uint32_t v, int64_t now, int64_t reported_hi, int64_t marked_hi) {
    if (r->len > 0) {
        sent_tsval *last = &r->at[(r->head + r->len - 1) % SENT_TSVAL_RING];
        if (last->tsval == v) {
            last->last_ns = now;
            return 0;
        }
        if ((int32_t)(v - last->tsval) < 0) return 0;
    }
    if (r->at == NULL && (r->at = malloc(sizeof(sent_tsval) * SENT_TSVAL_RING)) == NULL) return -1;
    if (r->len == SENT_TSVAL_RING) {
        r->head = (r->head + 1) % SENT_TSVAL_RING;
        r->len--;
    }
    r->at[(r->head + r->len) % SENT_TSVAL_RING] = (sent_tsval){v, now, now, reported_hi, marked_hi};
    r->len++;
    return 0;
}

/* The entry of TSval v, or NULL when it is not remembered (binary search: values rise). */
static const sent_tsval *sent_tsval_find(const sent_tsval_ring *r, uint32_t v) {
    int lo = 0, hi = r->len;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if ((int32_t)(r->at[(r->head + mid) % SENT_TSVAL_RING].tsval - v) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == r->len) return NULL;
    const sent_tsval *e = &r->at[(r->head + lo) % SENT_TSVAL_RING];
    return e->tsval == v ? e : NULL;
}

static void sender_rtt_sample(direction_state *s, int64_t r) {
    if (r < 0) return;
    if (s->sender_rtt_min_ns < 0 || r < s->sender_rtt_min_ns) s->sender_rtt_min_ns = r;
    s->sender_rtt_recent_ns[s->sender_rtt_next] = r;
    s->sender_rtt_next = (s->sender_rtt_next + 1) % SENDER_RECENT_RTT_SAMPLES;
    if (s->sender_rtt_len < SENDER_RECENT_RTT_SAMPLES) s->sender_rtt_len++;
}

static int64_t sender_rtt_recent_max_ns(const direction_state *s) {
    int64_t m = 0;
    for (int j = 0; j < s->sender_rtt_len; j++)
        if (s->sender_rtt_recent_ns[j] > m) m = s->sender_rtt_recent_ns[j];
    return m;
}

/* Lowest RTT seen: echoes of TSvals and the cumulative ACK's Karn samples (-1: none). */
static int64_t sender_rtt_floor_ns(const direction_state *s) {
    int64_t m = s->sender_rtt_min_ns;
    if (s->min_rtt_ns > 0 && (m < 0 || s->min_rtt_ns < m)) m = s->min_rtt_ns;
    return m;
}

static int reorder_bin(int64_t lag_ns) {
    if (lag_ns < 1000) return 0;
    int b = (int)floor(log2((double)lag_ns / 1000.0) * REORDER_BINS_PER_OCTAVE);
    return b < 0 ? 0 : b >= REORDER_BINS ? REORDER_BINS - 1 : b;
}

static void reorder_sample(direction_state *s, int64_t lag_ns) {
    s->reorder_samples++;
    if (lag_ns > 0) s->ro->hist[reorder_bin(lag_ns)]++;
}

/* Whether any segment reported as just arrived trailed one sent lag_ns later. */
static int reordered_that_far(const direction_state *s, int64_t lag_ns) {
    for (int b = reorder_bin(lag_ns); b < REORDER_BINS; b++)
        if (s->ro->hist[b] > 0) return 1;
    return 0;
}

/* Chance that a delivered first copy trails a segment sent lag_ns after it, for every bin:
 * late[b] = P(lag >= bin b's start). The reports see a trailing copy only until a TSecr
 * passes it (then it is discarded unseen): copies that awaited a word are the censored ones
 * (Kaplan-Meier), each weighted by its chance of delivery. */
static void reordering_survival(const direction_state *s, double late[REORDER_BINS]) {
    double censored[REORDER_BINS];
    for (int b = 0; b < REORDER_BINS; b++) censored[b] = s->ro->unreported_hist[b];
    for (int q = 0; q < s->awaiting_len; q++) {
        const awaiting_copy *c = &s->ro->awaiting[(s->awaiting_head + q) % AWAITING_RING];
        if (!c->settled && c->lag_ns > 0) censored[reorder_bin(c->lag_ns)] += 1.0 - c->lost;
    }
    int64_t in_order = s->reorder_samples; /* reports that trailed nothing */
    double at_risk = 0.0;
    for (int b = 0; b < REORDER_BINS; b++) {
        in_order -= s->ro->hist[b];
        at_risk += (double)s->ro->hist[b] + censored[b];
    }
    at_risk += (double)in_order;
    double survive = at_risk > 0 ? 1.0 - (double)in_order / at_risk : 0.0;
    at_risk -= (double)in_order;
    for (int b = 0; b < REORDER_BINS; b++) {
        late[b] = survive;
        if (at_risk > 0) survive *= 1.0 - (double)s->ro->hist[b] / at_risk;
        at_risk -= (double)s->ro->hist[b] + censored[b];
    }
}

/* Share of first copies lost: the certain losses and the inferred ones, plus one in one
 * more copy (so a short transfer without losses does not call reordering certain). */
static double first_copy_loss_rate(const direction_state *s, double inferred) {
    return ((double)s->first_copy_lost + inferred + 1.0) / ((double)s->first_copy_verdicts + 1.0);
}

/* The lag past which the path reorders less often than it loses a first copy. */
static int64_t reorder_window_ns(const direction_state *s, double loss_rate) {
    int64_t n = 0;
    for (int b = REORDER_BINS - 1; b >= 0; b--) {
        n += s->ro->hist[b];
        if ((double)n > loss_rate * (double)s->reorder_samples)
            return (int64_t)(1000.0 * exp2((double)(b + 1) / REORDER_BINS_PER_OCTAVE));
    }
    return 0;
}

/* Probability that an unreported first copy was lost rather than on its way: lag_ns as
 * above (<= 0: nothing sent later was reported, then its age against the recent RTT plus
 * the reordering window tells), at the loss rate and reordering (reordering_survival) given. */
static double copy_loss_probability(const direction_state *s, int64_t lag_ns, int64_t age_ns, double loss_rate,
                                    const double late_of_bin[REORDER_BINS]) {
    double late; /* chance that a delivered copy is still unreported */
    if (lag_ns > 0) {
        late = reordered_that_far(s, lag_ns) ? late_of_bin[reorder_bin(lag_ns)] : 0.0;
    } else {
        int64_t rtt = sender_rtt_recent_max_ns(s);
        late = rtt > 0 && age_ns > rtt + reorder_window_ns(s, loss_rate) ? 0.0 : 1.0;
    }
    if (loss_rate > 1.0) loss_rate = 1.0;
    double denominator = loss_rate + (1.0 - loss_rate) * late;
    return denominator > 0 ? loss_rate / denominator : 1.0;
}

/* The range's retransmissions were not needed: a first copy got there. Returns the segments
 * newly marked. */
static int64_t retransmissions_not_needed(pass *ps, int64_t d, const sent_segment *e) {
    direction_state *s = &ps->dirs[d];
    int64_t *S = stats_of(ps, d);
    int64_t marked = 0;
    for (int q = 0; q < s->retx_len; q++) {
        retx_entry *r = &s->retx[(s->retx_head + q) % RETX_RING];
        if (r->spurious || r->hi <= e->lo || r->lo >= e->hi) continue;
        marked += mark_not_needed(ps, d, r, INT64_MAX);
    }
    S[S_SPURIOUS_WITHOUT_DSACK] += marked;
    return marked;
}

/* A first copy arrived after all: its retransmissions were not needed. */
static void awaiting_delivered(pass *ps, int64_t d, awaiting_copy *c) {
    direction_state *s = &ps->dirs[d];
    c->settled = 1;
    int64_t k = sb_index(s, c->lo);
    if (k < s->sb_len && s->sb[k].lo == c->lo) s->sb[k].verdict = VERDICT_DELIVERED;
    sent_segment e = {c->lo, c->hi, c->first_ns, c->first_ns, 0, 0, 2, 1, 0, VERDICT_DELIVERED};
    retransmissions_not_needed(ps, d, &e);
}

/* The oldest awaiting first copy gets no word: lost with the probability the path's rates
 * give (the inferred count), labelled by the more likely fate. */
static void awaiting_retire(pass *ps, int64_t d, double loss_rate, const double late_of_bin[REORDER_BINS]) {
    direction_state *s = &ps->dirs[d];
    awaiting_copy *c = &s->ro->awaiting[s->awaiting_head];
    s->awaiting_head = (s->awaiting_head + 1) % AWAITING_RING;
    s->awaiting_len--;
    if (c->settled) return;
    double lost = copy_loss_probability(s, c->lag_ns, c->age_ns, loss_rate, late_of_bin);
    s->inferred_lost += lost;
    s->lost_inferred_variance += lost * (1.0 - lost);
    if (c->lag_ns > 0) s->ro->unreported_hist[reorder_bin(c->lag_ns)] += 1.0 - lost;
    if (2.0 * lost < 1.0) {
        awaiting_delivered(ps, d, c);        /* labelled delivered: */
        s->lost_inferred_correction += lost; /* count its chance of loss */
    } else {
        s->lost_inferred_correction -= 1.0 - lost; /* labelled lost: less its chance */
    }
}

/* A queue kept in a ring of `cap` entries, its oldest at *head, *len of them kept: drop the
 * oldest. */
static void fifo_drop_oldest(int *head, int *len, int cap) {
    *head = (*head + 1) % cap;
    (*len)--;
}

/* The same queue: the slot to write its newest entry in, the oldest dropped once full. */
static int fifo_push(int *head, int *len, int cap) {
    if (*len == cap) fifo_drop_oldest(head, len, cap);
    return (*head + (*len)++) % cap;
}

/* How long after leaving a late first copy can still arrive and be answered (LATE_COPY_RTTS). */
static int64_t late_copy_span_ns(const direction_state *s) {
    return RTO_MIN_NS + LATE_COPY_RTTS * sender_rtt_recent_max_ns(s);
}

/* Whether the peer's repeat at repeat_ns can answer a first copy that left at first_ns: the
 * copy left at least the lowest round trip before it, and arrives within late_copy_span_ns. */
static int repeat_answers(const direction_state *s, int64_t first_ns, int64_t repeat_ns) {
    int64_t floor_ns = sender_rtt_floor_ns(s);
    int64_t waited_ns = repeat_ns - first_ns;
    return waited_ns >= (floor_ns > 0 ? floor_ns : 0) && waited_ns <= late_copy_span_ns(s);
}

/* A first copy labelled lost arrived after all (a repeat answered it): it was no loss, and its
 * retransmissions, sent or to come, were not needed. */
static void lost_copy_arrived(pass *ps, int64_t d, const lost_copy *c) {
    direction_state *s = &ps->dirs[d];
    s->first_copy_lost--;
    s->ro->repeats_matched++;
    int64_t k = sb_index(s, c->lo);
    if (k < s->sb_len && s->sb[k].lo == c->lo) s->sb[k].verdict = VERDICT_DELIVERED;
    sent_segment e = {
        .lo = c->lo, .hi = c->hi, .first_ns = c->first_ns, .last_ns = c->first_ns, .verdict = VERDICT_DELIVERED};
    retransmissions_not_needed(ps, d, &e);
}

/* Whether first copy c, labelled lost, is still taken for lost (not covered by itself since). */
static int still_labelled_lost(const direction_state *s, const lost_copy *c) {
    int64_t k = sb_index(s, c->lo);
    return !(k < s->sb_len && s->sb[k].lo == c->lo && s->sb[k].verdict != VERDICT_LOST);
}

/* Whether the ACKs ever reported a segment trailing one sent after it. */
static int reports_reordered(const direction_state *s) {
    for (int b = 0; b < REORDER_BINS; b++)
        if (s->ro->hist[b] > 0) return 1;
    return 0;
}

/* The peer repeated its previous ACK at `now`: it discarded an arriving first copy (PAWS). On
 * a path whose reports never showed reordering (a late copy was discarded unreported: a busy
 * host's backlog held it longer than its repair took), the oldest first copy labelled lost
 * that it can answer arrived; with none yet (a copy is labelled when its repair is covered,
 * later), the repeat waits for one. */
static void peer_repeat(pass *ps, int64_t d, int64_t now) {
    direction_state *s = &ps->dirs[d];
    reordering *ro = s->ro;
    /* where the reports show reordering, late repairs are discarded as well (jitter: a repeat
     * per discarded repair moved the 200 ms sample from 86 to 63 for 91 drops): the awaiting
     * copies' estimate stands there */
    if (reports_reordered(s)) return;
    while (ro->lost_len > 0) {
        lost_copy c = ro->lost[ro->lost_head];
        if (now - c.first_ns <= late_copy_span_ns(s) && !repeat_answers(s, c.first_ns, now)) break;
        fifo_drop_oldest(&ro->lost_head, &ro->lost_len, LOST_COPIES_RECENT);
        if (now - c.first_ns > late_copy_span_ns(s) || !still_labelled_lost(s, &c)) continue;
        lost_copy_arrived(ps, d, &c);
        return;
    }
    ro->repeat_ns[fifo_push(&ro->repeat_head, &ro->repeat_len, DISCARD_REPEATS_RECENT)] = now;
}

/* First copy e was just labelled lost: a repeat the peer sent since it left shows it arrived
 * (the oldest such repeat answers it); else it is remembered for a repeat to come. */
static void lost_copy_labelled(pass *ps, int64_t d, sent_segment *e) {
    direction_state *s = &ps->dirs[d];
    reordering *ro = s->ro;
    lost_copy c = {e->lo, e->hi, e->first_ns};
    while (ro->repeat_len > 0 && ro->repeat_ns[ro->repeat_head] - e->first_ns > late_copy_span_ns(s))
        fifo_drop_oldest(&ro->repeat_head, &ro->repeat_len, DISCARD_REPEATS_RECENT); /* too old for any copy */
    for (int q = 0; q < ro->repeat_len; q++) {
        int slot = (ro->repeat_head + q) % DISCARD_REPEATS_RECENT;
        if (!repeat_answers(s, e->first_ns, ro->repeat_ns[slot])) continue;
        for (int r = q; r > 0; r--) /* the ring keeps its order without the one matched */
            ro->repeat_ns[(ro->repeat_head + r) % DISCARD_REPEATS_RECENT] =
                ro->repeat_ns[(ro->repeat_head + r - 1) % DISCARD_REPEATS_RECENT];
        fifo_drop_oldest(&ro->repeat_head, &ro->repeat_len, DISCARD_REPEATS_RECENT);
        lost_copy_arrived(ps, d, &c);
        return;
    }
    ro->lost[fifo_push(&ro->lost_head, &ro->lost_len, LOST_COPIES_RECENT)] = c;
}

/* Whether ACK i (cumulative ACK a, SACK blocks L/R, nb of them, maybe none, none a D-SACK)
 * repeats the peer's previous ACK as read: same ACK, window, blocks and echo, and a TSval not
 * older (an older one is an ACK the return path reordered, not a new answer). */
static int repeats_last_ack(const ack_seen *last, const truth_input *in, int64_t i, int64_t a, const int64_t L[],
                            const int64_t R[], int nb) {
    if (!last->valid || nb != last->nsack || a != last->ack || in->window[i] != last->window ||
        in->tsecr[i] != last->tsecr || (int32_t)(in->tsval[i] - last->tsval) < 0)
        return 0;
    for (int j = 0; j < nb; j++)
        if (L[j] != last->sack_lo[j] || R[j] != last->sack_hi[j]) return 0;
    return 1;
}

/* The peer's ACK i as the latest read, unless the return path reordered it behind a newer one. */
static void note_last_ack(ack_seen *last, const truth_input *in, int64_t i, int64_t a, const int64_t L[],
                          const int64_t R[], int nb) {
    if (last->valid && (int32_t)(in->tsval[i] - last->tsval) < 0) return;
    last->ack = a;
    last->nsack = nb;
    for (int j = 0; j < nb; j++) {
        last->sack_lo[j] = L[j];
        last->sack_hi[j] = R[j];
    }
    last->tsval = in->tsval[i];
    last->tsecr = in->tsecr[i];
    last->window = in->window[i];
    last->valid = 1;
}

/* An unreported first copy at the moment the ACKs could no longer report it. */
static void unreported_copy(pass *ps, int64_t d, sent_segment *e, int64_t now) {
    direction_state *s = &ps->dirs[d];
    int64_t lag_ns = s->covered_sent_max_ns - e->first_ns, age_ns = now - e->first_ns;
    double rate = first_copy_loss_rate(s, s->inferred_lost);
    s->first_copy_verdicts++;
    /* a copy trailing the first copies reported by less than a TSval tick is not discarded as
     * too old by their TSvals, and a late copy that is not discarded gets a D-SACK: none came,
     * it was lost; unless the receiver already echoes a TSval past its own by more than the
     * PAWS window (a repair of lower data, sent a round trip later, moved TS.Recent): then it
     * is discarded unseen whenever it arrives late, however little it trails */
    int echo_past = s->echo_valid && (int32_t)(s->echo_last - e->first_tsval) > PAWS_WINDOW_TICKS;
    int reordered = lag_ns > 0 ? (lag_ns > TSVAL_TICK_NS || echo_past) && reordered_that_far(s, lag_ns)
                               : !(sender_rtt_recent_max_ns(s) > 0 &&
                                   age_ns > sender_rtt_recent_max_ns(s) + reorder_window_ns(s, rate));
    /* Without SACK (its handshake says so) the reordering reads nothing: the segments "reported"
     * are those duplicate ACKs are assigned to in send order (bare_dupack_reports), and the
     * receiver answers every duplicate it gets with one too, so a resent window runs that
     * assignment ahead of what arrived; a copy the cumulative ACK covered only with its repair
     * was lost. So where no SACK block could be read at all (the snaplen cut every ACK's
     * option: `tcpdump -s 72` keeps an IPv4 ACK's timestamps and not one block), the reports
     * are the same send-order guesses, and a lost first copy, covered only with its repair
     * after the guessed arrivals above it, reads as a late one (151 of 163 needed repairs
     * taken for spurious in one held-out BBR flow). */
    if (!s->uses_ts || s->reorder_samples == 0 || !reordered || sack_off(ps->in, d) || !s->sack_read) {
        e->verdict = VERDICT_LOST; /* the path never reordered that far */
        s->first_copy_lost++;
        if (s->uses_ts && s->ro != NULL && !reports_reordered(s)) lost_copy_labelled(ps, d, e);
        return;
    }
    if (s->ro->awaiting == NULL && (s->ro->awaiting = malloc(sizeof(awaiting_copy) * AWAITING_RING)) == NULL) {
        ps->out_of_memory = 1;
        return;
    }
    e->verdict = VERDICT_AWAITING;
    if (s->awaiting_len == AWAITING_RING) {
        double late[REORDER_BINS];
        reordering_survival(s, late);
        awaiting_retire(ps, d, rate, late);
    }
    s->ro->awaiting[(s->awaiting_head + s->awaiting_len) % AWAITING_RING] =
        (awaiting_copy){e->lo, e->hi, e->first_ns, lag_ns, age_ns, rate, 0};
    s->awaiting_len++;
}

/* The receiver's word on a range: a first copy awaiting it there arrived. */
static void awaiting_word(pass *ps, int64_t d, int64_t lo, int64_t hi) {
    direction_state *s = &ps->dirs[d];
    for (int q = 0; q < s->awaiting_len; q++) {
        awaiting_copy *c = &s->ro->awaiting[(s->awaiting_head + q) % AWAITING_RING];
        if (!c->settled && c->lo >= lo && c->hi <= hi) {
            awaiting_delivered(ps, d, c);
            return;
        }
    }
}

/* Of k copies of a segment, each lost with probability p on its own, the number lost when not
 * all k were (the receiver held the segment from one of them): its mean and variance. X ~
 * Binomial(k, p) conditioned on X < k: E[X | X < k] = (kp - k p^k) / (1 - p^k), and E[X^2 | X < k]
 * likewise from E[X^2] = kp(1 - p) + (kp)^2. One copy: none lost. */
static void held_copies_lost(double p, int k, double *mean, double *variance) {
    double all_lost = pow(p, (double)k), n = (double)k;
    if (all_lost >= 1.0) { /* every copy is lost: all but the one that arrived */
        *mean = n - 1.0;
        *variance = 0.0;
        return;
    }
    *mean = (n * p - n * all_lost) / (1.0 - all_lost);
    double second_moment = (n * p * (1.0 - p) + n * n * p * p - n * n * all_lost) / (1.0 - all_lost);
    double v = second_moment - *mean * *mean;
    *variance = v > 0.0 ? v : 0.0;
}

/* Without SACK, the share of copies sent in recovery that the path lost: the repairs whose fate
 * the ACKs told (fill_repairs_note), with one more copy lost at the first copies' rate
 * (first_rate), so that a connection with few such repairs keeps that rate. With SACK, the first
 * copies' rate. Resends of the window after a timeout and repairs leave in the same recoveries,
 * when the queue that dropped the first copies is full, and are lost more often than first copies
 * sent outside them (no-SACK BBR at a 2-5 ms queue: 33-41% of repairs, 15-41% of first copies). */
static double repair_loss_rate(const direction_state *s, double first_rate) {
    double rate = first_rate > 1.0 ? 1.0 : first_rate;
    return ((double)s->fill_repairs_lost + rate) / ((double)s->fill_repairs + 1.0);
}

/* RACK's reordering window when the path showed reordering, or fewer than DupThresh segments were
 * reported above a copy: a quarter of the lowest round trip (Linux's tcp_rack_reo_wnd). */
#define UNREPAIRED_RTT_DIV 4

/* First copies the capture saw sent once and never reported, judged as a RACK sender marks them
 * lost: sent before the latest-sent first copy the receiver reported by more than the reordering
 * window (none where the path showed no reordering and more than DupThresh - 1 segments' bytes
 * were reported above the copy, RFC 6675's IsLost; else the path's window, at least a quarter of
 * the lowest round trip). The connection ended (the receiver closed, an application's timed
 * test) before any repair left, so no retransmission counts them. Segments each (a
 * super-segment the sender handed over counts its MSSes). */
static int64_t unrepaired_losses_at_end(const direction_state *s, double loss_rate) {
    if (s->sb == NULL || s->ro == NULL || !s->sack_read || !s->uses_ts || s->mss <= 0) return 0;
    int64_t path_window_ns = reorder_window_ns(s, loss_rate);
    int64_t floor_ns = sender_rtt_floor_ns(s);
    int64_t rack_window_ns = floor_ns > 0 ? floor_ns / UNREPAIRED_RTT_DIV : 0;
    if (path_window_ns > rack_window_ns) rack_window_ns = path_window_ns;
    int64_t reported_above = 0, segments = 0;
    for (int64_t k = s->sb_len - 1; k >= s->sb_first; k--) {
        const sent_segment *e = &s->sb[k];
        if (e->covered) {
            reported_above += e->hi - e->lo;
            continue;
        }
        /* a copy awaiting the receiver's word counts in the estimate (S_LOST_INFERRED_MILLI) */
        if (e->copies != 1 || (e->verdict != VERDICT_PENDING && e->verdict != VERDICT_LOST)) continue;
        int dupthresh = path_window_ns == 0 && reported_above > (DUPTHRESH_SEGMENTS - 1) * s->mss;
        if (s->covered_sent_max_ns - e->first_ns <= (dupthresh ? 0 : rack_window_ns)) continue;
        segments += (e->hi - e->lo + s->mss - 1) / s->mss;
    }
    return segments;
}

/* What the ACKs told of an entry's first copy: arrived (FATE_DELIVERED), lost (FATE_LOST), or
 * nothing yet (FATE_UNTOLD: a copy awaiting the receiver's word, or one resent that no ACK has
 * answered, as a timeout resends when the receiver has gone silent). */
enum first_copy_fate { FATE_DELIVERED = 0, FATE_LOST = 1, FATE_UNTOLD = 2 };
static uint8_t first_copy_fate(const sent_segment *e) {
    if (e->verdict == VERDICT_LOST) return FATE_LOST;
    return e->verdict == VERDICT_DELIVERED ? FATE_DELIVERED : FATE_UNTOLD;
}

/* The cumulative ACK retires entry e: its fate joins the ring of the newest retired. */
static void retired_note(direction_state *s, const sent_segment *e) {
    if (s->ro == NULL) return;
    reordering *ro = s->ro;
    int slot = ro->retired_next;
    int64_t segments = segments_of(e->hi - e->lo, s->mss);
    ro->retired_segments[slot] = segments > INT32_MAX ? INT32_MAX : (int32_t)segments;
    ro->retired_fate[slot] = first_copy_fate(e);
    ro->retired_next = (slot + 1) % RETIRED_RECENT;
    if (ro->retired_len < RETIRED_RECENT) ro->retired_len++;
}

/* The flight the capture's end left unreported: first copies sent after the latest-sent one the
 * receiver reported (ACK or SACK; so no RACK sender could judge them, and unrepaired_losses_at_end
 * counts none of them), sent once and never reported, at the top of the scoreboard (a resend among
 * them, a tail loss probe, is stepped over). The receiver closed or the application's timed test
 * ended before any ACK could tell their fate, so no retransmission counts those lost. Returns its
 * segments; *below: the index of the entry below the flight (sb_first - 1: none). */
static int64_t unreported_flight(const direction_state *s, int64_t *below) {
    int64_t segments = 0, k = s->sb_len - 1;
    for (; k >= s->sb_first && !s->sb[k].covered && s->sb[k].first_ns > s->covered_sent_max_ns; k--) {
        const sent_segment *e = &s->sb[k];
        if (e->copies == 1 && (e->verdict == VERDICT_PENDING || e->verdict == VERDICT_LOST))
            segments += segments_of(e->hi - e->lo, s->mss);
    }
    *below = k;
    return segments;
}

/* Of the `want` segments sent just below the unreported flight whose fate the ACKs told (the
 * scoreboard's entries from `below` down, then those the cumulative ACK retired, newest first), how
 * many there are (*segments) and how many lost their first copy (*lost). */
static void segments_below_flight(const direction_state *s, int64_t below, int64_t want, int64_t *segments,
                                  int64_t *lost) {
    *segments = *lost = 0;
    for (int64_t k = below; k >= s->sb_first && *segments < want; k--) {
        uint8_t fate = first_copy_fate(&s->sb[k]);
        if (fate == FATE_UNTOLD) continue;
        int64_t n = segments_of(s->sb[k].hi - s->sb[k].lo, s->mss);
        *segments += n;
        if (fate == FATE_LOST) *lost += n;
    }
    const reordering *ro = s->ro;
    for (int q = 1; q <= ro->retired_len && *segments < want; q++) {
        int slot = (ro->retired_next - q + RETIRED_RECENT) % RETIRED_RECENT;
        if (ro->retired_fate[slot] == FATE_UNTOLD) continue;
        *segments += ro->retired_segments[slot];
        if (ro->retired_fate[slot] == FATE_LOST) *lost += ro->retired_segments[slot];
    }
}

/* How many times faster the flight above scoreboard entry `below` left than the connection's data
 * was delivered (the bytes its cumulative ACK covered, over the time from the ACK's first advance
 * to its last): only a flight faster than delivery adds to the bottleneck's queue. A flight sent at
 * once: INFINITY; a connection whose delivery rate is unknown: NAN. */
static double flight_pace_over_delivery(const pass *ps, int64_t d, int64_t below) {
    const direction_state *s = &ps->dirs[d];
    const int64_t *S = stats_of(ps, d);
    const sent_segment *lowest = &s->sb[below + 1], *highest = &s->sb[s->sb_len - 1];
    int64_t flight_ns = highest->first_ns - lowest->first_ns;
    int64_t delivered_ns = S[S_LAST_ACKED_TS] - S[S_FIRST_ACKED_TS];
    int64_t delivered_bytes = s->have_una ? s->snd_una - s->base : 0;
    if (delivered_ns <= 0 || delivered_bytes <= 0 || S[S_FIRST_ACKED_TS] < 0) return NAN;
    if (flight_ns <= 0) return INFINITY;
    return (double)(highest->hi - lowest->lo) * (double)delivered_ns / ((double)delivered_bytes * (double)flight_ns);
}

/* Whether the flight above scoreboard entry `below` left faster than the connection's data was
 * delivered (flight_pace_over_delivery): a queue that overflowed in the round trips before it may
 * go on dropping; one sent no faster lets it drain (a BBR flow after its probe:
 * d150-gro-v6-p3-bbr-l1-j30, flights of 20-46 sent at 0.6-1.0 of the flow's delivery rate after
 * windows that lost 6-13 of 40-92 segments, none lost). A flight sent at once, or a connection
 * whose delivery rate is unknown: yes. */
static int flight_outpaced_delivery(const pass *ps, int64_t d, int64_t below) {
    double pace = flight_pace_over_delivery(ps, d, below);
    return isnan(pace) || pace > 1.0;
}

/* A flight sent at least this many times faster than the connection's data was delivered left at
 * least 1 - 1/this of itself queued at the bottleneck (it drains at the delivery rate): where the
 * queue was already dropping, that part may have been lost whatever the loss before it. */
#define FLIGHT_QUEUED_PACE_FACTOR 2.0

/* Whether the flight above scoreboard entry `below` left at least FLIGHT_QUEUED_PACE_FACTOR times
 * faster than the connection's data was delivered; a flight sent at once: yes; a connection whose
 * delivery rate is unknown: no (nothing to tell). */
static int flight_mostly_queued(const pass *ps, int64_t d, int64_t below) {
    double pace = flight_pace_over_delivery(ps, d, below);
    return !isnan(pace) && pace > FLIGHT_QUEUED_PACE_FACTOR;
}

/* First copies in the flight unreported at the end (unreported_flight) lost as often as those sent
 * just before it whose fate the ACKs told: twice the flight's own segments, the same path's most
 * recent round trips (a queue overflowing at the end of a long path's transfer loses a fifth of a
 * flight where the transfer's whole rate is 4%), where that loss was still being repaired when the
 * ACKs stopped and the flight left faster than the connection's data was delivered
 * (flight_outpaced_delivery). With SACK only:
 * without it the ACKs tell nothing above a hole (s30-ns). Its mean and variance (binomial, and the
 * rate's own from the segments that measured it); *flight: the flight's segments. */
static void unreported_flight_lost(const pass *ps, int64_t d, int64_t *flight, int64_t *at_risk, double *mean,
                                   double *variance) {
    const direction_state *s = &ps->dirs[d];
    *flight = *at_risk = 0;
    *mean = *variance = 0.0;
    if (s->sb == NULL || s->ro == NULL || sack_off(ps->in, d)) return;
    int64_t below, measured, lost;
    *flight = unreported_flight(s, &below);
    /* where no SACK block could be read (a snaplen that cuts them), data reported above a hole
     * reads as unreported: no estimate from those */
    /* the loss the window measured goes on into the flight only where its episode was not over
     * when the ACKs stopped: the receiver still lacked data below data it had (m5
     * off-v6-p3-cubic-l5: 15 of 890 lost before, the holes all filled 24 ms before the end, and
     * none of the 445 segments after), and the flight added to the queue */
    int holes_open = s->have_una && s->snd_una < s->reported_hi;
    if (*flight == 0 || !s->sack_read || !holes_open || !flight_outpaced_delivery(ps, d, below)) return;
    /* the flight went into a queue that was dropping and mostly queued there: its fate is open
     * whatever the estimate (a queue that overflows as the flight arrives loses from it alone: a
     * bottleneck whose rate fell) */
    if (flight_mostly_queued(ps, d, below)) *at_risk = *flight;
    segments_below_flight(s, below, UNREPORTED_WINDOW_FLIGHTS * *flight, &measured, &lost);
    if (measured == 0 || lost == 0) return;
    double rate = (double)lost / (double)measured, n = (double)*flight;
    *mean = rate * n;
    *variance = n * rate * (1.0 - rate) * (1.0 + n / (double)measured);
}

/* End of the capture: every awaiting copy retires at the loss rate and reordering that
 * account for them (expectation-maximisation: each copy's chance of loss sets the rate and
 * the censored reordering, which set the chances), and the copies not needed add their
 * expected losses. */
static void scoreboard_finish(pass *ps, int64_t d) {
    direction_state *s = &ps->dirs[d];
    double late[REORDER_BINS], rate = first_copy_loss_rate(s, s->inferred_lost);
    for (int round = 0; round < SCOREBOARD_EM_ROUNDS; round++) {
        reordering_survival(s, late);
        double sum = s->inferred_lost;
        for (int q = 0; q < s->awaiting_len; q++) {
            awaiting_copy *c = &s->ro->awaiting[(s->awaiting_head + q) % AWAITING_RING];
            if (c->settled) continue;
            c->lost = copy_loss_probability(s, c->lag_ns, c->age_ns, rate, late);
            sum += c->lost;
        }
        rate = first_copy_loss_rate(s, sum);
    }
    reordering_survival(s, late);
    while (s->awaiting_len > 0) awaiting_retire(ps, d, rate, late);
    /* A copy labelled lost that arrived behind its repair was answered, by a D-SACK or, when
     * the receiver discarded it, by a repeat of its previous ACK: the estimate takes back no
     * more copies than repeats no copy took (none: it takes back nothing) */
    if (s->ro != NULL) {
        double repeats_left = (double)(s->ro->repeats_seen - s->ro->repeats_matched);
        if (s->lost_inferred_correction < -repeats_left) s->lost_inferred_correction = -repeats_left;
    }
    /* first copies resent with a window, lost as often as the first copies whose fate is known */
    if (s->resent_untold_first_copies > 0) {
        double first_lost = rate > 1.0 ? 1.0 : rate;
        s->lost_inferred_correction += first_lost * (double)s->resent_untold_first_copies;
        s->lost_inferred_variance += first_lost * (1.0 - first_lost) * (double)s->resent_untold_first_copies;
    }
    /* segments held from one of k copies, each lost as often as the repairs whose fate is known
     * (repair_loss_rate), and not all k lost */
    double copy_lost = repair_loss_rate(s, rate);
    for (int k = 1; k <= HELD_COPIES_MAX; k++) {
        double mean, variance;
        held_copies_lost(copy_lost, k, &mean, &variance);
        s->lost_inferred_correction += mean * (double)s->held_from_one_of[k];
        s->lost_inferred_variance += variance * (double)s->held_from_one_of[k];
    }
    s->lost_inferred_correction += copy_lost * (double)s->held_copies_beyond;
    s->lost_inferred_variance += copy_lost * (1.0 - copy_lost) * (double)s->held_copies_beyond;
    /* copies not needed and not shown to have arrived (a D-SACK shows one); without SACK none
     * is shown, with timestamps or without (a no-SACK, no-timestamps sender resends whole
     * windows not needed after a timeout, and the path loses those copies too); those of
     * segments held from one of their copies are counted above */
    int64_t *S = stats_of(ps, d);
    S[S_LOST_UNREPAIRED] = unrepaired_losses_at_end(s, rate);
    double flight_lost, flight_variance;
    unreported_flight_lost(ps, d, &S[S_UNREPORTED_AT_END], &S[S_UNREPORTED_AT_RISK], &flight_lost, &flight_variance);
    S[S_UNREPORTED_LOST_MILLI] = (int64_t)llround(1000.0 * flight_lost);
    S[S_UNREPORTED_LOST_SD_MILLI] = (int64_t)llround(1000.0 * sqrt(flight_variance));
    s->lost_inferred_correction += flight_lost;
    s->lost_inferred_variance += flight_variance;
    int64_t unproven = S[S_SPURIOUS] - S[S_DSACK_BLOCKS] - s->dsack_more_segments - s->held_retransmissions;
    if (s->first_copy_verdicts > 0 && (s->uses_ts || sack_off(ps->in, d)) && unproven > 0) {
        double unneeded_loss_rate = rate - 1.0 / ((double)s->first_copy_verdicts + 1.0);
        s->lost_inferred_correction += unneeded_loss_rate * (double)unproven;
        s->lost_inferred_variance += unneeded_loss_rate * (1.0 - unneeded_loss_rate) * (double)unproven;
    }
    S[S_LOST_INFERRED_MILLI] = (int64_t)llround(1000.0 * s->lost_inferred_correction);
    S[S_LOST_INFERRED_SD_MILLI] = (int64_t)llround(1000.0 * sqrt(s->lost_inferred_variance));
}

/* Room in the scoreboard for one more entry (its capacity doubled when full): 0, or -1 out of
 * memory. */
static int sb_room_for_one(direction_state *s) {
    if (s->sb_len < s->sb_cap) return 0;
    int64_t nc = s->sb_cap ? s->sb_cap * 2 : 256;
    sent_segment *nb = realloc(s->sb, sizeof(sent_segment) * (size_t)nc);
    if (!nb) return -1;
    s->sb = nb;
    s->sb_cap = nc;
    return 0;
}

/* Without SACK, the entry holding byte `at` strictly inside it is cut in two there: [lo, at) and
 * [at, hi), each keeping the whole entry's history. A sender with TSO/GSO hands a super-segment of
 * several MSS to the NIC as one packet, but the receiver gets its segments one by one (GSO, or a
 * qdisc that cuts it into segments), acknowledges them one by one, and the sender repeats one MSS
 * of it after a partial ACK (RFC 6582; Linux cuts its skb at the ACK). So a cumulative ACK or a
 * repeat that ends inside the entry is read for the bytes on each side: the Eifel echo and the
 * NewReno rules then judge the repair of one MSS, not the super-segment around it. The callers
 * cut only where the connection uses timestamps: there the echo judges each piece; without them
 * only the ACKs' structure does (covered_with_lower_fill, resent_with_window), and an ACK over
 * several pieces of one super-segment is what a receiver that coalesces arrivals (GRO) sends for
 * segments that came together, no sign that a repair was not needed. Only an uncovered entry is
 * cut (no covered run's skip steps over it); indices past it move by one. Returns 0, or -1 out
 * of memory. */
static int sb_split_at(direction_state *s, int64_t at) {
    int64_t k = sb_index(s, at);
    if (k >= s->sb_len || s->sb[k].lo >= at || s->sb[k].covered) return 0;
    if (sb_room_for_one(s) < 0) return -1;
    memmove(s->sb + k + 2, s->sb + k + 1, sizeof(sent_segment) * (size_t)(s->sb_len - k - 1));
    s->sb[k + 1] = s->sb[k];
    s->sb[k + 1].lo = at;
    s->sb[k].hi = at;
    s->sb_len++;
    if (s->sb_verdict_next > k) s->sb_verdict_next++;
    if (s->dupack_next > k) s->dupack_next++;
    return 0;
}

/* A first copy below data already in the scoreboard (room for it made): an original reordered on
 * its way here, at a vantage read as the sender's (the router's interface from the sender, where a
 * veth's per-CPU queues let segments pass each other: fill_first_copy_next_to_sender). It goes in
 * at its place in sequence order, entry k, as left with the data above it (their first copy's
 * time, if earlier than its own here): sb_index's search, the covered runs' steps and the flight's
 * walk down from the top all read the entries in sequence and send order. Appended at the end, it
 * broke that order for the rest of the connection: the router's interface from a bidir transfer's
 * sender read 96 lost for 188 (51 originals reordered before it, 180 needed repairs then taken as
 * not needed), where the sender's own capture read 188. Indices at or past k move by one; a
 * covered run below k steps no further than k (the new entry is uncovered). */
static void sb_insert_late_original(direction_state *s, int64_t k, sent_segment e) {
    if (s->sb[k].first_ns < e.first_ns) e.first_ns = e.last_ns = s->sb[k].first_ns;
    memmove(s->sb + k + 1, s->sb + k, sizeof(sent_segment) * (size_t)(s->sb_len - k));
    s->sb[k] = e;
    s->sb_len++;
    for (int64_t j = k - 1; j >= s->sb_first && s->sb[j].covered; j--)
        if (j + s->sb[j].skip > k) s->sb[j].skip = (int32_t)(k - j);
    if (s->sb_verdict_next > k) s->sb_verdict_next++;
    if (s->dupack_next > k) s->dupack_next++;
}

/* Data sent: a first copy joins the scoreboard, a repeat is one more copy of its ranges. */
static void scoreboard_on_send(pass *ps, int64_t d, int64_t i, int64_t lo, int64_t hi, int repeat) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    int64_t now = in->ts_ns[i];
    if (in->has_ts[i]) {
        s->uses_ts = 1;
        if (sent_tsval_note(&s->data_tsvals_sent, in->tsval[i], now, -1, -1) < 0) {
            ps->out_of_memory = 1;
            return;
        }
    }
    if (s->ro == NULL && (s->ro = calloc(1, sizeof(reordering))) == NULL) {
        ps->out_of_memory = 1;
        return;
    }
    if (repeat) {
        if (sack_off(in, d) && s->uses_ts && (sb_split_at(s, lo) < 0 || sb_split_at(s, hi) < 0)) {
            ps->out_of_memory = 1;
            return;
        }
        for (int64_t k = sb_index(s, lo); k < s->sb_len && s->sb[k].lo < hi; k++) {
            sent_segment *e = &s->sb[k];
            e->copies++;
            e->last_ns = now;
            e->last_tsval = in->tsval[i];
            if (e->verdict == VERDICT_DELIVERED) retransmissions_not_needed(ps, d, e);
        }
        return;
    }
    if (s->sb_len == s->sb_cap) {
        if (s->sb_first > 0) {
            memmove(s->sb, s->sb + s->sb_first, sizeof(sent_segment) * (size_t)(s->sb_len - s->sb_first));
            s->sb_len -= s->sb_first;
            s->sb_verdict_next -= s->sb_first;
            s->dupack_next -= s->sb_first;
            s->sb_first = 0;
        }
        if (sb_room_for_one(s) < 0) {
            ps->out_of_memory = 1;
            return;
        }
    }
    sent_segment first = {lo, hi, now, now, in->tsval[i], in->tsval[i], 1, 1, 0, VERDICT_PENDING};
    int64_t k = sb_index(s, lo);
    if (k < s->sb_len)
        sb_insert_late_original(s, k, first);
    else
        s->sb[s->sb_len++] = first;
}

/* A segment newly ACKed or SACKed. `fresh`: reported as just arrived (the SACK block the
 * receiver lists first, or the segment that moved the cumulative ACK), so its send time
 * measures reordering against what was reported before. */
static void scoreboard_cover(pass *ps, int64_t d, sent_segment *e, int64_t now, int fresh, int64_t *newest_sent_ns) {
    direction_state *s = &ps->dirs[d];
    e->covered = 1;
    if (e->copies == 1) {
        if (fresh) reorder_sample(s, s->covered_sent_max_ns - e->first_ns);
        if (e->first_ns > *newest_sent_ns) *newest_sent_ns = e->first_ns;
        if (e->verdict == VERDICT_AWAITING)
            awaiting_word(ps, d, e->lo, e->hi); /* it came in time */
        else if (e->verdict == VERDICT_PENDING)
            s->first_copy_verdicts++;
        e->verdict = VERDICT_DELIVERED;
        return;
    }
    int64_t floor_ns = sender_rtt_floor_ns(s);
    int early = floor_ns > 0 && (now - e->last_ns + TSVAL_TICK_NS) * EARLY_COVER_DEN < floor_ns * EARLY_COVER_NUM;
    if (early && e->verdict == VERDICT_AWAITING) awaiting_word(ps, d, e->lo, e->hi);
    if (e->verdict != VERDICT_PENDING) return;
    if (early) {
        s->first_copy_verdicts++;
        e->verdict = VERDICT_DELIVERED;
        retransmissions_not_needed(ps, d, e);
        return;
    }
    unreported_copy(ps, d, e, now); /* covered by a later copy */
}

/* A newer TSecr: an RTT sample, and first copies older than it by more than the PAWS window
 * that are still unreported get their verdict (from now on they would be discarded). */
static void scoreboard_on_echo(pass *ps, int64_t d, uint32_t echo, int64_t now) {
    direction_state *p = &ps->dirs[d];
    const sent_tsval *sent = sent_tsval_find(&p->data_tsvals_sent, echo);
    if (sent != NULL) {
        /* the segment that moved the receiver's in-order point left with this TSval */
        sender_rtt_sample(p, now - sent->last_ns);
        if (sent->first_ns > p->covered_sent_max_ns) p->covered_sent_max_ns = sent->first_ns;
    }
    /* without SACK the ACKs report nothing above the cumulative ACK: an echo past a first copy
     * above a hole says nothing of it (it is judged when the cumulative ACK covers it) */
    if (sack_off(ps->in, d)) return;
    if (p->sb_verdict_next < p->sb_first) p->sb_verdict_next = p->sb_first;
    while (p->sb_verdict_next < p->sb_len &&
           (int32_t)(echo - p->sb[p->sb_verdict_next].first_tsval) > PAWS_WINDOW_TICKS) {
        sent_segment *e = &p->sb[p->sb_verdict_next++];
        if (!e->covered && e->verdict == VERDICT_PENDING) unreported_copy(ps, d, e, now);
    }
}

/* A duplicate ACK with no SACK block to read, at the sender: either the connection uses no SACK
 * (none negotiated, or a middlebox stripped it) or the snaplen cut the option off (`-s 96` over
 * IPv6 cuts the first block). Each such ACK still says one more segment above the cumulative ACK
 * arrived (RFC 5681 3.2): the next one sent when the path keeps order, if it left a round trip
 * (the lowest seen) before the ACK came; that one counts as reported, so first copies sent
 * before it have a later one reported (unreported_copy's lag), as a SACK block would have shown.
 * Returns 1 (it is no discard). On a connection that uses SACK (its handshake says so, or, none
 * captured, a SACK block was read) an ACK captured whole is bare only for a segment the receiver
 * discarded (PAWS): no report (returns 0). */
static int bare_dupack_reports(pass *ps, int64_t d, int64_t i, int64_t a, int64_t *newest_sent_ns) {
    direction_state *p = &ps->dirs[d];
    uint8_t sack = ps->in->sack_negotiated[d];
    int without_sack = sack == TRUTH_SACK_OFF || (sack != TRUTH_SACK_ON && !p->sack_read);
    if (!without_sack && !(ps->in->decode_flags[i] & TRUTH_DECODE_TRUNCATED)) return 0;
    if (p->dupack_una != a || p->dupack_next < p->sb_first) {
        p->dupack_una = a;
        p->dupack_next = sb_index(p, a) + 1; /* the segment at the ACK is the one missing */
    }
    int64_t rtt_ns = sender_rtt_floor_ns(p);
    if (p->dupack_next >= p->sb_len) return 1;
    const sent_segment *e = &p->sb[p->dupack_next];
    if (rtt_ns > 0 && ps->in->ts_ns[i] - e->first_ns < rtt_ns) return 1; /* it cannot have arrived yet */
    p->dupack_next++;
    if (e->first_ns > *newest_sent_ns) *newest_sent_ns = e->first_ns;
    return 1;
}

/* Without SACK, one cumulative ACK covered the repair that filled the hole at the old cumulative
 * ACK (its newest copy left at fill_ns) and, above it, segment e, whose newest copy is a
 * retransmission that left more than the lowest RTT the cumulative ACKs showed after that repair.
 * A receiver answers at once a segment that fills a hole while data above it is still missing
 * (RFC 5681 4.2), and after a timeout's silence it acknowledges every segment (quick ACKs); one
 * ACK covers several arrivals only when they come together (GRO, a delayed ACK of two in a row).
 * Had the receiver needed e's newest copy, the fill would have reached it about a round trip
 * before that copy could, and its ACK would have left on its own. So the receiver had e from an
 * earlier copy: e's newest copy was not needed (go-back-N after a timeout, NewReno resending after
 * a partial ACK what the receiver already held), and no D-SACK, which needs SACK, says so. */
static int covered_with_lower_fill(const pass *ps, int64_t d, const sent_segment *e, int64_t fill_ns) {
    if (!sack_off(ps->in, d) || fill_ns < 0 || e->copies < 2 || e->covered) return 0;
    int64_t floor_ns = ps->dirs[d].min_rtt_ns; /* Karn's samples: echoes are known to a tick only */
    return floor_ns > 0 && e->last_ns - fill_ns > floor_ns;
}

/* Without SACK, a cumulative ACK showed the receiver held segment e from one of its `copies`
 * oldest copies (1 or more), without telling which: the retransmissions among them count as not
 * needed, and the copies as lost at the rate repairs are lost, knowing that not all of them were
 * (scoreboard_finish: held_copies_lost). Counting each copy lost at that rate on its own would
 * count copies that cannot all have been lost: of 2 copies one arrived, so at most one is lost
 * (2p/(1+p) of them expected, not 2p). */
static void held_copies_note(pass *ps, int64_t d, sent_segment *e, int64_t copies) {
    direction_state *s = &ps->dirs[d];
    int64_t segments = segments_of(e->hi - e->lo, s->mss);
    if (copies <= HELD_COPIES_MAX)
        s->held_from_one_of[copies] += segments;
    else
        s->held_copies_beyond += copies * segments;
    e->verdict = VERDICT_DELIVERED;
    s->held_retransmissions += retransmissions_not_needed(ps, d, e);
}

/* Without SACK, the cumulative ACK moved past segment e, which it had stood at, and nothing shows
 * an earlier copy arrived: its newest copy, a repair, filled the hole, and every copy before it
 * was lost (the path keeps order: an earlier copy would have arrived first, and the ACK had stood
 * at e). Of its repairs, all but the newest were lost: the ACKs tell the fate of these repairs,
 * sent in the same recoveries as the copies whose fate they do not tell (held_copies_note). */
static void fill_repairs_note(pass *ps, int64_t d, const sent_segment *e) {
    direction_state *s = &ps->dirs[d];
    if (!s->uses_ts || !sack_off(ps->in, d) || e->copies < 2 || e->verdict != VERDICT_PENDING) return;
    s->fill_repairs += e->copies - 1;
    s->fill_repairs_lost += e->copies - 2;
}

/* The newest retransmission of segment e was not needed; with two copies, the first arrived. */
static void newest_copy_not_needed(pass *ps, int64_t d, sent_segment *e) {
    direction_state *s = &ps->dirs[d];
    if (e->copies == 2 && e->verdict == VERDICT_PENDING) {
        s->first_copy_verdicts++;
        e->verdict = VERDICT_DELIVERED;
        retransmissions_not_needed(ps, d, e);
        return;
    }
    for (int q = s->retx_len - 1; q >= 0; q--) {
        retx_entry *r = &s->retx[(s->retx_head + q) % RETX_RING];
        if (r->hi <= e->lo || r->lo >= e->hi) continue;
        if (!r->spurious) stats_of(ps, d)[S_SPURIOUS_WITHOUT_DSACK] += mark_not_needed(ps, d, r, INT64_MAX);
        break;
    }
    /* the receiver held e from one of the copies before the newest, no ACK telling which */
    if (s->uses_ts && sack_off(ps->in, d) && e->copies > 2 && e->verdict == VERDICT_PENDING)
        held_copies_note(ps, d, e, e->copies - 1);
}

/* Without SACK, the cumulative ACK moved past segment e, which it had stood at (its lowest), and
 * echoes a TSval older than that of e's newest copy, a retransmission. The receiver had sent its
 * previous ACK with e missing, so the first segment to arrive at e's start after it set the
 * timestamp it echoes (RFC 7323 4.3: TS.Recent is taken from a segment at the left edge of the
 * window it last acknowledged, Linux's rcv_wup): an earlier copy of e arrived first, and the newest
 * was not needed (RFC 3522's Eifel detection, read from the capture; with SACK, D-SACK tells). */
static int echo_shows_earlier_copy(const pass *ps, int64_t d, int64_t i, const sent_segment *e) {
    const truth_input *in = ps->in;
    return sack_off(in, d) && e->copies >= 2 && !e->covered && in->has_ts[i] && ps->dirs[d].uses_ts &&
           (int32_t)(e->last_tsval - in->tsecr[i]) > 0;
}

/* Without SACK, one cumulative ACK covered the repair that filled the hole at the old cumulative
 * ACK (its newest copy left at fill_ns) and, above it, segment e, whose newest copy is a
 * retransmission that left before that repair, or with it (within the lowest RTT after it: else
 * covered_with_lower_fill). A sender without SACK knows of the lowest hole only and repairs it
 * one segment at a time (RFC 6582; Linux cuts a super-segment to mark one MSS lost), so a copy of
 * e above it was no repair of a loss the sender knew of: it is the window resent in sequence
 * order after a timeout, back to back with the fill, or one segment per duplicate ACK behind a
 * repair of the fill that was lost (the ACK stood at the hole while those copies arrived). Whether
 * e's first copy arrived the ACK cannot tell: the receiver held e when the fill arrived, and one
 * that coalesces arriving segments (GRO) answers a fill and the copies right behind it at once.
 * So e's copies count as not needed, and its first copy as lost as often as first copies whose
 * fate is known are (window_resend_not_needed). */
static int resent_with_window(const pass *ps, int64_t d, const sent_segment *e, int64_t fill_ns) {
    return sack_off(ps->in, d) && fill_ns >= 0 && e->copies >= 2 && !e->covered && e->verdict == VERDICT_PENDING;
}

/* Segment e's retransmissions were a resend of the window (resent_with_window): not needed. The
 * newest copy left with the fill or before it, so any of e's copies may be the one the receiver
 * held (held_copies_note). Without timestamps the repairs whose fate the ACKs told cannot be read
 * (fill_repairs_note: nothing tells a fill's repair from the resend of a spurious timeout), so
 * there e's first copy counts as lost at the rate first copies were lost (scoreboard_finish). */
static void window_resend_not_needed(pass *ps, int64_t d, sent_segment *e) {
    direction_state *s = &ps->dirs[d];
    if (s->uses_ts) {
        held_copies_note(ps, d, e, e->copies);
        return;
    }
    s->resent_untold_first_copies++;
    e->verdict = VERDICT_DELIVERED;
    retransmissions_not_needed(ps, d, e);
}

/* ---- without SACK: repairs the order of the cumulative ACK's steps shows were not needed ----
 *
 * Without SACK the cumulative ACK is all the receiver says, and it answers at once a segment that
 * arrives while data above it is missing (RFC 5681 4.2). An ACK that moved past a repaired segment
 * e and stopped at the start of the next one, n, says the receiver held e and not n; a later ACK
 * covering n says n's filling copy arrived after e's. On a path that keeps order, e's filling copy
 * left before n's, which left no later than n's newest copy: where that is older than e's repair,
 * e's first copy filled it and the repair was not needed. NewReno does this: at each partial ACK
 * it resends the segment the ACK stops at (RFC 6582), while that segment's first copy is still in
 * the bottleneck's queue, one partial ACK per arrival (nsts-v4-p1-cubic-l2, no SACK or timestamps:
 * 22 repeats not needed, taken for losses: 200 lost for 179). Where n was resent after e's repair
 * too, e waits for n's fate: the run resolves from its top down. Not after a timeout's go-back-N
 * resend of a window lost whole, where each step's next segment was resent before its step. Only
 * without timestamps: with them the echo says which copy filled e (echo_shows_earlier_copy), also
 * where a repair overtook the segments of a super-segment a queue lets out one at a time. */

/* Whether e, just covered on its own by an ACK at a == e->hi, is one step of such a run: sent
 * twice, and the next entry n, starting at a, had its first copy sent before e's repair. */
static int held_alone_step(const direction_state *p, const sent_segment *e, int64_t a) {
    if (e->copies != 2 || e->hi != a) return 0;
    int64_t k = sb_index(p, a);
    return k < p->sb_len && p->sb[k].lo == a && !p->sb[k].covered && p->sb[k].first_ns < e->last_ns;
}

/* The repairs of the run whose copy filling them left before `filled_by_ns` (the newest time the
 * copy that filled the segment above the run's top can have left) were not needed: from the top
 * down, each such segment's first copy filled it, and bounds the one below. The run is done. */
static void in_order_chain_resolve(pass *ps, int64_t d, int64_t filled_by_ns) {
    direction_state *s = &ps->dirs[d];
    reordering *ro = s->ro;
    for (int j = ro->in_order_chain_len - 1; j >= 0 && filled_by_ns < ro->in_order_chain[j].last_ns; j--) {
        const held_alone *h = &ro->in_order_chain[j];
        sent_segment e = {h->lo, h->hi, h->first_ns, h->last_ns, 0, 0, 2, 1, 0, VERDICT_DELIVERED};
        if (retransmissions_not_needed(ps, d, &e) > 0 && s->first_copy_lost > 0) s->first_copy_lost--;
        filled_by_ns = h->first_ns;
    }
    ro->in_order_chain_len = 0;
}

/* Without SACK, the cumulative ACK moved past `covered` entries, the lowest `lowest`: the segment
 * right above the run's top now covered settles the run, or, covered on its own in the same way
 * (held_alone_step), joins it; a step elsewhere starts a new run. */
static void fifo_chain_step(pass *ps, int64_t d, const sent_segment *lowest, int64_t covered, int64_t a) {
    direction_state *s = &ps->dirs[d];
    reordering *ro = s->ro;
    if (ro == NULL) return;
    int step = covered == 1 && held_alone_step(s, lowest, a);
    if (ro->in_order_chain_len > 0) {
        const held_alone *top = &ro->in_order_chain[ro->in_order_chain_len - 1];
        if (lowest->lo != top->hi)
            ro->in_order_chain_len = 0;
        else if (!step || lowest->first_ns >= top->last_ns)
            /* the copy that filled `lowest` left no later than its newest */
            in_order_chain_resolve(ps, d, lowest->copies == 1 ? lowest->first_ns : lowest->last_ns);
        else if (ro->in_order_chain_len == IN_ORDER_CHAIN_MAX)
            ro->in_order_chain_len = 0;
    }
    if (step)
        ro->in_order_chain[ro->in_order_chain_len++] =
            (held_alone){lowest->lo, lowest->hi, lowest->first_ns, lowest->last_ns};
}

/* This packet as an ACK of the scoreboard's data: covers, D-SACKs, TSecr echo, and a
 * duplicate ACK that says nothing new (the receiver discarded an arriving segment: Linux
 * answers each segment PAWS rejects with one, RFC 7323 5.3). */
static void scoreboard_on_ack(pass *ps, int64_t d, int64_t i) {
    const truth_input *in = ps->in;
    direction_state *p = &ps->dirs[d ^ 1];
    int64_t now = in->ts_ns[i];
    uint16_t f = in->tcp_flags[i];
    if (!(f & TRUTH_TCP_ACK) || (f & TRUTH_TCP_RST) || p->sb_len == p->sb_first) return;
    int64_t a = unwrap32(p->hi_end, in->ack[i]);
    int64_t newest_sent_ns = p->covered_sent_max_ns;
    int duplicate = a == p->sb_una && in->payload_len[i] == 0 && !(f & (TRUTH_TCP_SYN | TRUTH_TCP_FIN)) &&
                    p->ack_window_valid && in->window[i] == p->ack_window_last;
    int news = !duplicate;
    p->ack_window_last = in->window[i];
    p->ack_window_valid = 1;
    /* the cumulative ACK: the first newly covered segment is the one that just arrived */
    int fresh = 1;
    int64_t fill_ns = -1; /* the newest copy of a repair that filled the hole at the old ACK */
    if (sack_off(in, d ^ 1) && p->uses_ts && a > p->sb_una && sb_split_at(p, a) < 0) {
        ps->out_of_memory = 1;
        return;
    }
    sent_segment lowest = {0};
    int64_t covered = 0;
    for (int64_t k = p->sb_first; k < p->sb_len && p->sb[k].hi <= a; k++) {
        if (p->sb[k].covered) continue;
        if (covered++ == 0) lowest = p->sb[k];
        if (fresh && p->sb[k].lo <= p->sb_una && p->sb[k].copies > 1) {
            fill_ns = p->sb[k].last_ns;
            if (echo_shows_earlier_copy(ps, d ^ 1, i, &p->sb[k]))
                newest_copy_not_needed(ps, d ^ 1, &p->sb[k]);
            else
                fill_repairs_note(ps, d ^ 1, &p->sb[k]);
        } else if (covered_with_lower_fill(ps, d ^ 1, &p->sb[k], fill_ns))
            newest_copy_not_needed(ps, d ^ 1, &p->sb[k]);
        else if (resent_with_window(ps, d ^ 1, &p->sb[k], fill_ns))
            window_resend_not_needed(ps, d ^ 1, &p->sb[k]);
        scoreboard_cover(ps, d ^ 1, &p->sb[k], now, fresh && p->sb[k].lo <= p->sb_una, &newest_sent_ns);
        fresh = 0;
    }
    if (covered > 0 && sack_off(in, d ^ 1) && !p->uses_ts) fifo_chain_step(ps, d ^ 1, &lowest, covered, a);
    if (a > p->sb_una) p->sb_una = a;
    /* SACK blocks (a D-SACK first block reports a duplicate, not an arrival) */
    int64_t L[TRUTH_MAX_SACK], R[TRUTH_MAX_SACK];
    int first = 0;
    int nb = sack_blocks(ps, d ^ 1, i, a, L, R, &first);
    if (nb > 0) p->sack_read = 1;
    if (p->uses_ts && p->ro != NULL && in->has_ts[i]) {
        /* on a connection that uses SACK, read whole (a cut option repeats nothing) */
        int sack_on = in->sack_negotiated[d ^ 1] == TRUTH_SACK_ON || p->sack_read;
        if (duplicate && !first && sack_on && !(in->decode_flags[i] & TRUTH_DECODE_TRUNCATED) &&
            repeats_last_ack(&p->ro->last_ack, in, i, a, L, R, nb)) {
            p->ro->repeats_seen++;
            peer_repeat(ps, d ^ 1, now);
        }
        note_last_ack(&p->ro->last_ack, in, i, a, L, R, nb);
    }
    if (nb == 0 && duplicate && p->hi_end > a && bare_dupack_reports(ps, d ^ 1, i, a, &newest_sent_ns)) news = 1;
    if (first) {
        news = 1;
        for (int64_t k = sb_index(p, L[0]); k < p->sb_len && p->sb[k].lo < R[0]; k++) {
            sent_segment *e = &p->sb[k];
            if (e->verdict == VERDICT_PENDING && e->copies == 2 && e->lo >= L[0] && e->hi <= R[0]) {
                p->first_copy_verdicts++; /* two copies, one a duplicate: the first arrived */
                e->verdict = VERDICT_DELIVERED;
                retransmissions_not_needed(ps, d ^ 1, e);
            }
        }
        awaiting_word(ps, d ^ 1, L[0], R[0]);
    }
    for (int j = first; j < nb; j++) {
        if (R[j] <= L[j]) continue;
        for (int64_t k = sb_uncovered(p, sb_index(p, L[j])); k < p->sb_len && p->sb[k].lo < R[j];
             k = sb_uncovered(p, k + 1))
            if (p->sb[k].lo >= L[j] && p->sb[k].hi <= R[j]) {
                scoreboard_cover(ps, d ^ 1, &p->sb[k], now, j == first, &newest_sent_ns);
                news = 1;
            }
    }
    p->covered_sent_max_ns = newest_sent_ns;
    if (in->has_ts[i] && (!p->echo_valid || (int32_t)(in->tsecr[i] - p->echo_last) > 0)) {
        p->echo_last = in->tsecr[i];
        p->echo_valid = 1;
        scoreboard_on_echo(ps, d ^ 1, in->tsecr[i], now);
        news = 1;
    }
    if (!news && p->hi_end > a) stats_of(ps, d ^ 1)[S_DISCARD_DUPACKS]++;
    while (p->sb_first < p->sb_len && p->sb[p->sb_first].hi <= a) retired_note(p, &p->sb[p->sb_first++]);
}

/* A ring of `cap` entries written at *next, *len of them kept: the slot to write the newest
 * entry in, the oldest dropped once full. */
static int ring_push(int *next, int *len, int cap) {
    int slot = *next;
    *next = (*next + 1) % cap;
    if (*len < cap) (*len)++;
    return slot;
}

/* When the capture last saw the peer's ACK of this direction's data (-1: never): the newest
 * entry of the ring of its ACK times. */
static int64_t peer_ack_latest_ns(const direction_state *s) {
    return s->peer_acks_len > 0 ? s->peer_acks_ns[(s->peer_acks_next + PEER_ACKS_RECENT - 1) % PEER_ACKS_RECENT] : -1;
}

/* Whether the capture saw the peer's ACK of this direction's data between t0_ns and t1_ns: 1
 * yes, 0 no, -1 unknown (no ACK captured yet, or the ring no longer reaches back to t0_ns). */
static int peer_acked_between(const direction_state *s, int64_t t0_ns, int64_t t1_ns) {
    if (s->peer_acks_len == 0) return -1;
    int oldest = (s->peer_acks_next - s->peer_acks_len + PEER_ACKS_RECENT) % PEER_ACKS_RECENT;
    for (int j = 0; j < s->peer_acks_len; j++) {
        int64_t t = s->peer_acks_ns[(oldest + j) % PEER_ACKS_RECENT];
        if (t >= t0_ns && t <= t1_ns) return 1;
    }
    return s->peer_acks_len == PEER_ACKS_RECENT && s->peer_acks_ns[oldest] > t0_ns ? -1 : 0;
}

/* The time span_ns (>= 0) before t_ns, the earliest representable when that is out of range. */
static int64_t ns_before(int64_t t_ns, int64_t span_ns) {
    return t_ns < INT64_MIN + span_ns ? INT64_MIN : t_ns - span_ns;
}

/* The path's reordering extent (REORDER_LAGS_RECENT): the longest lag of the newest late
 * originals, 0 none. */
static int64_t reorder_extent_ns(const direction_state *s) {
    int64_t m = 0;
    for (int j = 0; j < s->reorder_lag_len; j++)
        if (s->reorder_lag_ns[j] > m) m = s->reorder_lag_ns[j];
    return m;
}

/* What new data's TSecr showed the sender had heard (echoed_reported_hi, echoed_marked_hi), as
 * it stood with the data that arrived by at_ns: on a path that reorders, data that arrived
 * within the reordering extent before a repair may have left after it. */
static void echoed_as_of(const direction_state *s, int64_t at_ns, int64_t *reported_hi, int64_t *marked_hi) {
    *reported_hi = -1;
    *marked_hi = -1;
    for (int j = s->echoed_len - 1; j >= 0; j--) { /* newest first */
        int k = (s->echoed_next - s->echoed_len + j + ECHOED_RECENT) % ECHOED_RECENT;
        if (s->echoed_ns[k] <= at_ns) {
            *reported_hi = s->echoed_reported_at[k];
            *marked_hi = s->echoed_marked_at[k];
            return;
        }
    }
}

/* A capture that starts mid-connection (no SYN of the data direction) can open in a recovery:
 * its first data are repairs of holes whose data above had reached the receiver before the
 * capture began (at the sender, new data goes out above what was in flight then), and the
 * first ACK of the captured data acknowledges, or SACKs, those bytes too. Everything below
 * the highest byte the peer had reported received by then (before_capture_hi: that ACK, its
 * SACK blocks, and earlier reports) preceded the file: the holes the captured data left there
 * are closed uncounted, and the data seen so far extends to it; without this, the ACKs that
 * cover those bytes call them a capture gap. Above it, acknowledged data the capture never saw
 * is the capture's gap. `a`: the ACK, unwrapped against the direction's data; `i`: the ACK's
 * packet (its SACK blocks). */
static void data_before_capture(pass *ps, int64_t d, int64_t i, int64_t a) {
    direction_state *p = &ps->dirs[d ^ 1];
    const int64_t *P = stats_of(ps, d ^ 1);
    if (P[S_SYN_TS] >= 0 || P[S_SYNACK_TS] >= 0 || p->before_capture_hi >= 0) return;
    if (a <= p->base || a - p->hi_end > MAX_WINDOW_BYTES) return;
    int64_t reported = a > p->reported_hi ? a : p->reported_hi;
    int64_t L[TRUTH_MAX_SACK], R[TRUTH_MAX_SACK];
    int dsack = 0;
    int nb = sack_blocks(ps, d ^ 1, i, a, L, R, &dsack);
    for (int j = dsack; j < nb; j++)
        if (R[j] > reported && R[j] - p->hi_end <= MAX_WINDOW_BYTES) reported = R[j];
    p->before_capture_hi = reported;
    hole first;
    int found;
    holes_cut(ps, p, p->base, reported < p->hi_end ? reported : p->hi_end, &first, &found);
    if (reported > p->hi_end) p->hi_end = reported;
}

/* Without SACK, the peer's cumulative ACK moved on to `acked`: remembered for the direction's
 * timeout sweeps (timeout_sweep_gap), whose state this allocates. */
static void sweep_note_ack(pass *ps, direction_state *s, int64_t acked) {
    if (s->sweep == NULL) {
        s->sweep = calloc(1, sizeof(sweep_state));
        if (s->sweep == NULL) {
            ps->out_of_memory = 1;
            return;
        }
        s->sweep->next = -1;
    }
    s->sweep->acks[ring_push(&s->sweep->acks_next, &s->sweep->acks_len, SWEEP_RECENT)] = acked;
}

/* This packet as an acknowledgment of the peer direction's data. */
static void on_ack(pass *ps, int64_t d, int64_t i) {
    const truth_input *in = ps->in;
    direction_state *p = &ps->dirs[d ^ 1];
    int64_t *P = stats_of(ps, d ^ 1);
    uint16_t f = in->tcp_flags[i];
    if (!(f & TRUTH_TCP_ACK) || !p->have_ref || (f & TRUTH_TCP_RST)) return;
    if (p->peer_acks_len == 0 || peer_ack_latest_ns(p) != in->ts_ns[i])
        p->peer_acks_ns[ring_push(&p->peer_acks_next, &p->peer_acks_len, PEER_ACKS_RECENT)] = in->ts_ns[i];
    int64_t a = unwrap32(p->hi_end, in->ack[i]);
    data_before_capture(ps, d, i, a);
    if (a > p->hi_end + 1) a = p->hi_end + 1; /* the ACK of a FIN is one past the data */
    int64_t a_data = a > p->hi_end ? p->hi_end : a;
    if (!p->have_una || a > p->snd_una) {
        if (sack_off(in, d ^ 1)) sweep_note_ack(ps, p, a_data);
        on_ack_advance(ps, d, i, a, a_data);
    } else if (a == p->snd_una && in->payload_len[i] == 0 && !(f & (TRUTH_TCP_SYN | TRUTH_TCP_FIN)) && p->hi_end > a &&
               p->peer_window_known && in->window[i] == p->peer_window) {
        p->dupacks++;
        P[S_DUP_ACKS]++;
        if (in->mode[d ^ 1] >= TRUTH_MODE_RECEIVER && p->nholes > 0 && p->holes[0].lo == a &&
            ++p->holes[0].dupacks == DUPTHRESH_SEGMENTS) {
            p->holes[0].dupthresh_ns = in->ts_ns[i];
            p->dupthresh_last_ns = in->ts_ns[i];
            p->repair_after_dupthresh_ns = -1;
            p->new_after_recovery_repair = 0;
        }
    }
    on_sack(ps, d, i, a);
    if (in->mode[d ^ 1] == TRUTH_MODE_SENDER) scoreboard_on_ack(ps, d, i);
}

/* This packet announces its sender's receive window: it limits the peer. */
static void on_window(pass *ps, int64_t d, int64_t i) {
    direction_state *p = &ps->dirs[d ^ 1];
    int64_t *P = stats_of(ps, d ^ 1);
    uint16_t f = ps->in->tcp_flags[i], win = ps->in->window[i];
    if (f & (TRUTH_TCP_SYN | TRUTH_TCP_RST)) return;
    if (win == 0 && p->peer_window_known && p->peer_window != 0 && p->hi_end > p->base) P[S_ZERO_WINDOW_EVENTS]++;
    p->peer_window = win;
    p->peer_window_known = 1;
}

static void on_data_after_known_holes(pass *ps, int64_t d, int64_t i);
static int64_t known_lost_wait_ns(const direction_state *s);
static void repairs_overtaken(direction_state *s, int64_t echoed_ns, int64_t wait_ns, int64_t now, int64_t below,
                              int lowest_only);
static int64_t recent_rtt_max_ns(const direction_state *s);
static void on_data_above_holes(pass *ps, int64_t d, int64_t lo, int64_t hi, int opened, int first);
static int peer_tsval_as_of(const direction_state *p, int64_t at_ns, uint32_t *tsval);
static int peer_tsval_from(const direction_state *p, int64_t at_ns, uint32_t *tsval);
static int64_t recent_rtt_median_ns(const direction_state *s);

/* Downstream, a hole opening now: whether a repair passed here within the longest recent round
 * trip before, unless its TSval is older than the data just below the hole (it left before the
 * hole's data did, so its delivery tells a RACK sender nothing of it). */
static int opened_after_repair(const direction_state *s, int64_t now) {
    if (s->repair_seen_ns < 0 || (now >= s->repair_seen_ns && now - s->repair_seen_ns > recent_rtt_max_ns(s))) return 0;
    return !(s->repair_seen_has_ts && s->hi_end_has_ts && (int32_t)(s->repair_seen_tsval - s->hi_end_tsval) < 0);
}

/* Without SACK, whether a hole opening now lies above the end of every recovery its sender began
 * before (RFC 6582's recover: the highest data sent when the DupThresh-th duplicate ACK
 * arrived): none began, or new data arrived after the first repair that followed the latest
 * such ACK. On a path that keeps order, that data left after the repair, so at or above
 * recover, and the hole lies above it: the ACK that reaches the hole ends the recovery (Linux
 * holds a Reno recovery until data above recover is acknowledged), and the hole's own DupThresh
 * duplicate ACKs begin a fast retransmit. Called before the packet updates the state. */
static int newreno_open_below(const direction_state *s) {
    return s->dupthresh_last_ns < 0 || s->new_after_recovery_repair;
}

/* Data beyond the highest sequence seen; a jump past it leaves a hole. */
static void on_new_data(pass *ps, int64_t d, int64_t i, int64_t lo, int64_t hi) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    int64_t *S = stats_of(ps, d);
    int64_t now = in->ts_ns[i];
    if (in->mode[d] != TRUTH_MODE_SENDER) on_data_after_known_holes(ps, d, i);
    int opened = lo > s->hi_end, first = opened && s->nholes == 0;
    if (opened) {
        /* a gap: downstream a loss or reordering; next to the sender reordering on the way
         * here (a capture one hop away) or data the capture missed */
        S[S_FORWARD_JUMPS]++;
        int64_t id = ps->out->id64[i];
        /* the sender hears of the hole from an ACK sent once it opened; after a repair, also from
         * that repair's (RACK: it can have left after the hole's data), which arrived after the
         * data just below the hole did (the hole's data left after that, the repair after it) */
        int after_repair = opened_after_repair(s, now);
        int64_t heard_from_ns = after_repair ? ns_before(s->hi_end_ns, reorder_extent_ns(s)) : now;
        uint32_t opened_echo = 0;
        int opened_echo_known = peer_tsval_as_of(&ps->dirs[d ^ 1], heard_from_ns, &opened_echo);
        hole h = {.lo = s->hi_end,
                  .hi = lo,
                  .created_ns = now,
                  .reveal_id = id >= 0 ? id : -1,
                  .reveal_tsval = in->tsval[i],
                  .has_ts = in->has_ts[i] ? 1 : 0,
                  .opened_bytes = lo - s->hi_end,
                  .after_repair = after_repair,
                  .known_lost_ns = -1,
                  .generation_ns = now,
                  .repairs_overtaken = 0,
                  .lowest_ns = s->nholes == 0 ? now : -1,
                  .dupacks = 0,
                  .dupthresh_ns = -1,
                  .opened_echo = opened_echo,
                  .opened_echo_known = opened_echo_known,
                  .echoed_after_ns = -1,
                  .open_below = newreno_open_below(s),
                  .front_filled_ns = 0,
                  .heard_from_ns = heard_from_ns};
        holes_append(ps, s, h);
        if (s->generation_due_ns < 0 || now < s->generation_due_ns) s->generation_due_ns = now;
    }
    if (in->mode[d] != TRUTH_MODE_SENDER) on_data_above_holes(ps, d, lo, hi, opened, first);
    if (s->repair_after_dupthresh_ns >= 0) s->new_after_recovery_repair = 1;
    if (s->timeout_new_ns == 0) s->timeout_new_ns = now; /* F-RTO's (fill_unheard_without_sack) */
    ps->out->kind[i] = TRUTH_KIND_ORIGINAL;
    S[S_UNIQUE_BYTES] += hi - lo;
    s->hi_end = hi;
    s->hi_end_tsval = in->tsval[i];
    s->hi_end_has_ts = in->has_ts[i];
    s->hi_end_ns = now;
    if (in->mode[d] == TRUTH_MODE_SENDER) {
        if (s->rtt == NULL) s->rtt = malloc(sizeof(rtt_entry) * RTT_RING);
        if (s->rtt == NULL) {
            ps->out_of_memory = 1;
            return;
        }
        if (s->rtt_len == RTT_RING) {
            s->rtt_head = (s->rtt_head + 1) % RTT_RING;
            s->rtt_len--;
        }
        s->rtt[(s->rtt_head + s->rtt_len) % RTT_RING] = (rtt_entry){hi, now};
        s->rtt_len++;
    }
}

/* The round trip the handshake shows at this capture point (the longer leg), -1 unknown. */
static int64_t handshake_rtt_ns(const pass *ps, int64_t d) {
    const int64_t *A = stats_of(ps, d & ~1), *B = stats_of(ps, d | 1);
    int64_t syn = A[S_SYN_TS], synack = B[S_SYNACK_TS], ack = A[S_FIRST_ACK_TS];
    if (syn < 0 || synack < syn || ack < synack) return -1;
    return synack - syn > ack - synack ? synack - syn : ack - synack;
}

/* The path's minimum round trip as seen from direction d: this direction's own, else the
 * other direction's, else the handshake's; -1 unknown. */
static int64_t path_min_rtt_ns(const pass *ps, int64_t d) {
    const direction_state *s = &ps->dirs[d], *p = &ps->dirs[d ^ 1];
    int64_t rtt_ns = s->min_rtt_ns > 0 ? s->min_rtt_ns : p->min_rtt_ns;
    return rtt_ns > 0 ? rtt_ns : handshake_rtt_ns(ps, d);
}

/* Downstream of the sender (at the receiver, in path), data filling the hole h now: whether
 * the sender cannot have been asked for it. A sender repairs a hole at its retransmission
 * timeout, or on an ACK: one sent after the receiver had data above the hole (a duplicate
 * ACK, a SACK; the RACK timer it arms), or one of a segment sent after the hole's (RACK, RFC
 * 8985: a repair of lower data that left after it, delivered before the data that revealed
 * the hole, whose ACK then left a round trip or less before the hole opened here). So a fill
 * before a timeout can be, with no ACK from the peer seen since the hole opened and no repair
 * seen here for a round trip before it (the longest recent one), left before the sender knew
 * of the hole: a late original, reordered on the way (a veth's per-CPU queues reorder within
 * a TSval tick). The peer's ACKs must be in the capture, and the ring must reach back to the
 * hole's opening. */
static int fill_unasked(const pass *ps, int64_t d, int64_t i, const hole *h) {
    const direction_state *s = &ps->dirs[d];
    int64_t now = ps->in->ts_ns[i], rtt_ns = recent_rtt_max_ns(s);
    if (ps->in->mode[d] == TRUTH_MODE_SENDER || s->peer_acks_len == 0 || rtt_ns <= 0 || now < h->created_ns ||
        now - h->created_ns >= RTO_MIN_NS)
        return 0;
    if (h->after_repair) return 0;
    return peer_acked_between(s, h->created_ns, now) == 0;
}

/* Downstream, data in packet i filling the hole h before a timeout: whether its TSecr shows it
 * left before the sender can have heard of the hole. Short of a timeout, a sender repairs a
 * hole on an ACK of a segment it sent after the hole's (SACK of the data above, or a repair of
 * lower data: RACK), and echoes in all it sends after that ACK its TSval or a newer one (RFC
 * 7323: TS.Recent follows the peer's newest in-window TSval). The peer's ACKs leave it in
 * sending order, and its first one seen here since such a segment can have arrived
 * (heard_from_ns) is no newer than the one that told the sender. A fill echoing an older TSval
 * was sent before: the original, late. Where the ACKs come back in the same 1 ms TSval tick it
 * says nothing; it tells across a tick edge, where a receiver capture has no other sign: its
 * ACK leaves at once, so "no ACK since the hole opened" (fill_unasked) never holds there (seen:
 * IPv6 unshaped, GRO at the receiver, 0.1-0.2 ms round trips: of 703 late originals the
 * receiver capture counted as repairs, 294 echo older than the receiver's first ACK after the
 * hole opened; of 967 repairs of router drops, none). Read only while the round trips are under
 * a tick and the capture has missed none of this direction's data: behind a queue a sender
 * can know of a loss (a timeout, or repairs of the same burst that arrive in order and read as
 * new data) milliseconds before data above it arrives here, and a capture that drops packets
 * misses ACKs too, so the first one it holds is later than the first sent (seen: 100 Mbit/s
 * with a 2 ms queue, 12 repairs of queue drops read as late originals; receivers whose
 * tcpdump dropped 9-19%, counts 2-9% lower than before). */
static int fill_left_before_heard(const pass *ps, int64_t d, int64_t i, const hole *h) {
    const truth_input *in = ps->in;
    const direction_state *s = &ps->dirs[d];
    const sent_tsval_ring *acks = &ps->dirs[d ^ 1].tsvals_sent;
    int64_t rtt_ns = recent_rtt_median_ns(s);
    uint32_t heard;
    if (rtt_ns <= 0 || rtt_ns >= TSVAL_TICK_NS || stats_of(ps, d)[S_CAPTURE_GAPS] > 0) return 0;
    /* the peer's TSvals remembered must reach back that far */
    if (acks->len == 0 || acks->at[acks->head].first_ns > h->heard_from_ns) return 0;
    if (in->mode[d] == TRUTH_MODE_SENDER || !in->has_ts[i] || in->tsecr[i] == 0 ||
        in->ts_ns[i] - h->created_ns >= RTO_MIN_NS || !peer_tsval_from(&ps->dirs[d ^ 1], h->heard_from_ns, &heard))
        return 0;
    return (int32_t)(in->tsecr[i] - heard) < 0;
}

/* Next to the sender (a capture a hop from it, which the vantage reads as the sender's: the
 * router's interface from the sender), data never seen here filling the gap h: whether no ACK
 * of the peer passed here since the gap opened. There the peer's ACKs pass on their way to the
 * sender, so a repair of the gap leaves after one of them did (short of a timeout, and unless
 * a repair of lower data passed since the data below the gap: RACK, heard_from_ns); without
 * one it is the original, reordered on the hop (a veth's per-CPU queues), which a capture at
 * the sender itself never shows (seen: IPv6 unshaped, 1,122 first copies of data filling gaps
 * at the router's interface from the sender counted as retransmissions, 841 of segments the
 * sender sent once; no ACK passed between the gap and its fill for 90% of them). Not once the
 * capture missed data (it misses ACKs too). */
static int fill_unasked_near_sender(const pass *ps, int64_t d, int64_t i, const hole *h) {
    const direction_state *s = &ps->dirs[d];
    int64_t now = ps->in->ts_ns[i];
    if (ps->in->mode[d] != TRUTH_MODE_SENDER || s->peer_acks_len == 0 || stats_of(ps, d)[S_CAPTURE_GAPS] > 0 ||
        now < h->created_ns || now - h->created_ns >= RTO_MIN_NS || h->heard_from_ns != h->created_ns)
        return 0;
    return peer_acked_between(s, h->created_ns, now) == 0;
}

/* Data a retransmission timeout sent came now (fill_unheard_without_sack). */
static void timeout_seen(direction_state *s, int64_t now) {
    s->timeout_resend_ns = now;
    s->timeout_new_ns = 0;
}

/* Downstream, without SACK and without timestamps, data filling the hole h before a timeout:
 * whether its sender cannot have been asked for it. Such a sender knows of one hole only, the
 * segment at the cumulative ACK, and resends it before its timer fires on DupThresh duplicate
 * ACKs there (RFC 5681 3.2; Linux: tcp_newreno_mark_lost, sacked_out >= reordering), or in a
 * recovery on the partial ACK that reaches it (RFC 6582). So with no DupThresh duplicate ACKs at
 * the hole while it was the lowest (the receiver's ACKs are all in the capture, each one the
 * sender counts), opened above every recovery begun before it (newreno_open_below), with none
 * begun since (a DupThresh, a timeout's resend), not by the first new data after a timeout's
 * resend (F-RTO, RFC 5682: the sender sends new data before resending the rest of what it had
 * sent, which its timeout marked lost: seen, the timeout's resend, new data, then the repair of
 * the segment between, with one duplicate ACK), with no ACK moved on to the fill's start since it
 * opened, unless a late original moved it (else it can be a partial ACK: a recovery's repair of
 * a tail arrives in order and reads as new data, so newreno_open_below takes the recovery for
 * over; seen, 3 repairs one partial ACK each behind a hole that new data sent in the recovery
 * opened), and younger than the minimum RTO, the fill left before the sender could know of the
 * hole: the original, late (a veth's per-CPU queues reorder on the last hop: seen at a
 * receiver, three segments one ACK behind what router-out saw in order, counted as fast
 * repairs). Not once the capture missed data (it misses ACKs too). */
static int fill_unheard_without_sack(const pass *ps, int64_t d, int64_t i, const hole *h) {
    const truth_input *in = ps->in;
    const direction_state *s = &ps->dirs[d];
    int64_t now = in->ts_ns[i];
    if (in->mode[d] == TRUTH_MODE_SENDER || !sack_off(in, d) || in->has_ts[i] || s->peer_acks_len == 0 ||
        stats_of(ps, d)[S_CAPTURE_GAPS] > 0 || now < h->created_ns || now - h->created_ns >= RTO_MIN_NS)
        return 0;
    /* the ACK reached the fill's start since the hole opened: a partial ACK, unless what moved it
     * there was a late original (then no recovery was under way) */
    int64_t lo = unwrap32(s->hi_end, in->seq[i]);
    int partial_ack = s->have_una && s->snd_una == lo && s->una_moved_ns >= h->created_ns && !s->una_moved_by_late;
    return h->dupthresh_ns < 0 && h->open_below && s->dupthresh_last_ns < h->created_ns &&
           s->timeout_resend_ns < h->created_ns && h->created_ns != s->timeout_new_ns && !partial_ack;
}

/* Next to the sender (its own capture, or the router's interface from it: the vantages read as
 * the sender's), data never seen here filling the gap h, sent no later than the segment that
 * revealed the gap (its TSval tick or older): the original, late. The sender sends every byte
 * first as an original, in order, and nothing between it and here drops (the path's losses come
 * after the router's tap), so a repair would repeat a copy already seen here, and a first copy
 * sent before the data above it is that original, reordered on the hop (a veth's per-CPU queues;
 * on a sub-millisecond path its repair can carry the same tick, so the tick alone cannot tell).
 * Seen: unshaped IPv6, the router's interface from the sender, 763 such first copies counted as
 * retransmissions against the sender's 3,115 in TCP_INFO. Not once the capture missed data (a
 * repair then fills the gap its missed original left). */
static int fill_first_copy_next_to_sender(const pass *ps, int64_t d, int64_t i, const hole *h) {
    const truth_input *in = ps->in;
    if (in->mode[d] != TRUTH_MODE_SENDER || stats_of(ps, d)[S_CAPTURE_GAPS] > 0) return 0;
    if (!in->has_ts[i] || !h->has_ts) return 0;
    return (int32_t)(in->tsval[i] - h->reveal_tsval) <= 0;
}

/* A hole filled: a late original or a retransmission? */
static int fills_as_reordered(const pass *ps, int64_t d, int64_t i, const hole *h) {
    const truth_input *in = ps->in;
    int64_t id = ps->out->id64[i];
    if (in->id_per_packet[d] && id >= 0 && h->reveal_id >= 0) return id < h->reveal_id;
    int64_t min_rtt_ns = path_min_rtt_ns(ps, d);
    if (in->has_ts[i] && h->has_ts && in->tsval[i] != h->reveal_tsval)
        return (int32_t)(in->tsval[i] - h->reveal_tsval) < 0;
    /* the revealing segment's own TSval tick: a repair leaves at least a round trip after
     * it, so on a path whose round trip is longer than a tick it is a late original */
    if (in->has_ts[i] && h->has_ts && min_rtt_ns > TSVAL_TICK_MAX_NS) return 1;
    if (fill_unasked(ps, d, i, h) || fill_left_before_heard(ps, d, i, h) || fill_unasked_near_sender(ps, d, i, h) ||
        fill_unheard_without_sack(ps, d, i, h))
        return 1;
    int64_t thr = min_rtt_ns > 0 ? min_rtt_ns / REORDER_RTT_DIV : REORDER_DEFAULT_NS;
    return (in->ts_ns[i] - h->created_ns) < thr;
}

static int64_t recent_rtt_max_ns(const direction_state *s) {
    int64_t m = 0;
    for (int j = 0; j < s->recent_rtt_len; j++)
        if (s->recent_rtt_ns[j] > m) m = s->recent_rtt_ns[j];
    return m;
}

/* The shortest of the recent round trips (the caller has at least one). */
static int64_t recent_rtt_min_ns(const direction_state *s) {
    int64_t m = s->recent_rtt_ns[0];
    for (int j = 1; j < s->recent_rtt_len; j++)
        if (s->recent_rtt_ns[j] < m) m = s->recent_rtt_ns[j];
    return m;
}

/* The median of n values (at most MEDIAN_VALUES_MAX: the recent RTT samples, the recently
 * repaired holes), 0 none. */
#define MEDIAN_VALUES_MAX (SACKED_PAST_RECENT > RECENT_RTT_SAMPLES ? SACKED_PAST_RECENT : RECENT_RTT_SAMPLES)
static int64_t median_of(const int64_t *values, int n) {
    int64_t v[MEDIAN_VALUES_MAX];
    if (n <= 0) return 0;
    if (n > MEDIAN_VALUES_MAX) n = MEDIAN_VALUES_MAX;
    for (int j = 0; j < n; j++) { /* insertion sort: a few entries */
        int64_t x = values[j];
        int k = j;
        for (; k > 0 && v[k - 1] > x; k--) v[k] = v[k - 1];
        v[k] = x;
    }
    return v[n / 2];
}

/* The median of the newest receiver-side RTT samples, 0 none. A sample from data the sender
 * held back (a timeout, a loss probe) is the sender's wait, not the path's: the median stays
 * with the path while a few such samples come in. */
static int64_t recent_rtt_median_ns(const direction_state *s) { return median_of(s->recent_rtt_ns, s->recent_rtt_len); }

/* How long after its hole opened a first repair can fill it (FIRST_REPAIR_RTTS). */
static int64_t first_repair_within_ns(const direction_state *s) {
    int64_t median_ns = recent_rtt_median_ns(s);
    if (median_ns > INT64_MAX / FIRST_REPAIR_RTTS) return INT64_MAX; /* clocks out of range */
    int64_t rtts_ns = FIRST_REPAIR_RTTS * median_ns;
    return rtts_ns > RTO_MIN_NS ? rtts_ns : RTO_MIN_NS;
}

/* Repairs lost before packet i that it shows: the direction's count, and the packet's own
 * (where the caller asked for it) so that other evidence can be joined packet by packet. */
static void count_lost_repairs(pass *ps, int64_t d, int64_t i, int64_t repairs) {
    stats_of(ps, d)[S_LOST_REPAIRS] += repairs;
    if (ps->out->lost_repairs) ps->out->lost_repairs[i] += (int32_t)repairs;
}

/* How many retransmission timeouts a repair that fills its hole hole_age_ns after it opened
 * waited: a sender repairs a lost repair at the RTO (first_repair_within_ns), and each
 * repair lost again after twice the wait before (RFC 6298 5.5 backoff), so each timeout
 * waited is one more repair lost (at most TIMEOUT_BACKOFFS_MAX, Linux's tcp_retries2). */
static int64_t repair_timeouts_waited(const direction_state *s, int64_t hole_age_ns) {
    int64_t wait_ns = first_repair_within_ns(s), waited_ns = wait_ns, timeouts = 0;
    while (hole_age_ns > waited_ns && timeouts < TIMEOUT_BACKOFFS_MAX) {
        timeouts++;
        if (wait_ns > (INT64_MAX - waited_ns) / 2) break; /* no later timeout fits in int64 */
        wait_ns *= 2;
        waited_ns += wait_ns;
    }
    return timeouts;
}

/* A repair below the highest repair so far that left before it (an earlier TSval tick, or
 * the same tick on a path slower than a tick): reordered on the way, not a second repair. */
static int repair_reordered(const pass *ps, int64_t d, int64_t i) {
    const truth_input *in = ps->in;
    const direction_state *s = &ps->dirs[d];
    if (!in->has_ts[i] || !s->retx_fill_has_ts) return 0;
    int32_t ticks = (int32_t)(in->tsval[i] - s->retx_fill_tsval);
    return ticks < 0 || (ticks == 0 && path_min_rtt_ns(ps, d) > TSVAL_TICK_MAX_NS);
}

/* A repair of the hole h, open hole_age_ns, arriving now: whether new data that
 * arrived before it had left after the sender heard DupThresh segments above the hole, more
 * than the sender's habit, and the repair came a round trip later than its first repairs do
 * (DUPTHRESH_SEGMENTS): its first repair was lost. Remembers what this hole had. */
static int repair_sacked_past(const pass *ps, int64_t d, const hole *h, int64_t hole_age_ns, int64_t now) {
    int64_t hole_hi = h->hi;
    direction_state *s = &ps->dirs[d];
    int64_t reported_hi, marked_hi;
    echoed_as_of(s, ns_before(now, reorder_extent_ns(s)), &reported_hi, &marked_hi);
    int64_t above = reported_hi > hole_hi ? reported_hi - hole_hi : 0;
    int64_t above_median = median_of(s->sacked_past, s->sacked_past_len);
    int64_t age_median_ns = median_of(s->repair_age_ns, s->sacked_past_len);
    /* segment sizes, sequence spans and clocks out of range (a fuzzed table) decide nothing */
    int in_range = s->mss > 0 && s->mss < INT64_MAX / 4 / DUPTHRESH_SEGMENTS &&
                   above_median < INT64_MAX / 4 / SACKED_PAST_MEDIAN_FACTOR && age_median_ns < INT64_MAX / 2;
    int lost = in_range && s->sacked_past_len > 0 && h->opened_bytes <= s->mss &&
               above >= DUPTHRESH_SEGMENTS * s->mss &&
               above > SACKED_PAST_MEDIAN_FACTOR * above_median + DUPTHRESH_SEGMENTS * s->mss &&
               hole_age_ns > age_median_ns + age_median_ns / SECOND_REPAIR_AGE_DIV;
    s->repair_age_ns[s->sacked_past_next] = hole_age_ns;
    s->sacked_past[s->sacked_past_next] = above;
    s->sacked_past_next = (s->sacked_past_next + 1) % SACKED_PAST_RECENT;
    if (s->sacked_past_len < SACKED_PAST_RECENT) s->sacked_past_len++;
    return lost;
}

/* A repair of the hole h (one segment), open hole_age_ns, arriving now: whether new data that
 * arrived before it had left after the sender heard an ACK that made it mark the hole lost, and
 * the repair came at least SECOND_REPAIR_RTTS round trips after the hole opened, on a path that
 * showed the sender no reordering: its first repair was lost. */
static int repair_after_marked(const pass *ps, int64_t d, const hole *h, int64_t hole_age_ns, int64_t now) {
    const direction_state *s = &ps->dirs[d];
    const int64_t *S = stats_of(ps, d);
    int64_t rtt_median_ns = recent_rtt_median_ns(s), reported_hi, marked_hi;
    echoed_as_of(s, ns_before(now, reorder_extent_ns(s)), &reported_hi, &marked_hi);
    return !s->sender_saw_reordering && S[S_SPURIOUS] == 0 && h->opened_bytes <= s->mss && h->hi <= marked_hi &&
           rtt_median_ns > 0 && rtt_median_ns < INT64_MAX / SECOND_REPAIR_RTTS &&
           hole_age_ns >= SECOND_REPAIR_RTTS * rtt_median_ns;
}

/* Downstream, whether the capture cannot tell when the sender marked a hole lost: the round trip
 * seen here is under a TSval tick, the path reorders (late originals recognised,
 * reorder_extent_ns) and the sender knows it: it heard of a late original (SACKed data above it
 * before it came), or a D-SACK told it a repair was not needed (spurious retransmissions: RFC
 * 8985 then widens RACK's reordering window a step per round trip that had one). Such a sender
 * waits out that window before it marks a hole lost, and Linux arms the wait (RACK's reordering
 * timer) in jiffies, two at least: 2-8 ms, tens of round trips here, while it keeps sending new
 * data; and a TSecr names only the 1 ms tick of the ACK the sender had heard, some ten round
 * trips of ACKs. New data that overtook a repair, or reports of segments above its hole, then
 * show no lost repair: only a timeout does (seen: IPv6 at 1.3 Gbit/s, 0.5% loss, 0.1-0.2 ms
 * round trips: at the sender, 0.37 ms from the first SACK above a hole to its repair at the
 * median, 9.3 ms at the 90th percentile, 34 ms at the 99th; in path 948 repairs counted lost
 * where the sender resent 31 segments a third time, 56 with this rule). */
static int marking_unseen(const pass *ps, int64_t d) {
    const direction_state *s = &ps->dirs[d];
    int64_t rtt_ns = path_min_rtt_ns(ps, d);
    int sender_knows = s->sender_saw_reordering || stats_of(ps, d)[S_SPURIOUS] > 0;
    return sender_knows && reorder_extent_ns(s) > 0 && rtt_ns > 0 && rtt_ns < TSVAL_TICK_NS;
}

/* How many of the hole h's repairs data overtook, as its repair arriving now shows: on a path
 * that reorders, data that arrived within the reordering extent before the repair may have
 * left after it (REORDER_LAGS_RECENT), so the latest overtaking that close is no evidence. */
static int64_t repairs_overtaken_shown(const direction_state *s, const hole *h, int64_t now) {
    if (h->repairs_overtaken > 0 && ns_before(now, reorder_extent_ns(s)) < h->generation_ns)
        return h->repairs_overtaken - 1;
    return h->repairs_overtaken;
}

/* The repairs of hole h that data overtook (repairs_overtaken_shown), as many as can have been lost:
 * without SACK no more than one per minimum RTO the hole was open (hole_age_ns), and at least one.
 * Such a sender hears of a lost repair only from its retransmission timer (no SACK of the data
 * sent after it, so no RACK), which fires at most once per minimum RTO: new data overtakes a
 * lost repair round trip after round trip until then, and the hole loses one repair per timeout,
 * not one per round trip (a sender that saw reordering also waits for more than DupThresh
 * duplicate ACKs before its first repair, and new data overtakes the hole with none sent). */
static int64_t overtaken_repairs_lost(const pass *ps, int64_t d, const hole *h, int64_t now, int64_t hole_age_ns) {
    int64_t overtaken = repairs_overtaken_shown(&ps->dirs[d], h, now);
    int64_t timers = hole_age_ns / RTO_MIN_NS > 1 ? hole_age_ns / RTO_MIN_NS : 1;
    return sack_off(ps->in, d) && overtaken > timers ? timers : overtaken;
}

/* How many repairs of a hole shown lost were lost: one per retransmission timeout it waited,
 * or per time data overtook its repair (repairs_overtaken_shown), and at least one. */
static int64_t repairs_lost_count(int64_t timeouts, int64_t overtaken) {
    int64_t n = timeouts > overtaken ? timeouts : overtaken;
    return n > 1 ? n : 1;
}

/* Downstream, segments that arrived while holes were open (new data above them, or a repair
 * filling one): what the sender can have repaired before a timeout. A sender in recovery sends
 * no more than the ACKs report delivered (RFC 6937's proportional rate reduction, bounded by
 * what was delivered when the flight is below ssthresh; BBR's packet conservation likewise),
 * so the segments it sent and lost before a timeout are at most those that arrived since the
 * holes opened, less those it sent in recovery that arrived. Counting every arrival errs
 * towards repairs sent, as the rules before this one read. */
static void repair_budget_add(direction_state *s, int64_t segments) {
    if (s->nholes > 0 && s->repair_budget_segments < INT64_MAX - segments) s->repair_budget_segments += segments;
}

/* Downstream, data [lo, hi) beyond the highest seen (opened: it left a hole; first: no other
 * hole was open): the budget of repairs restarts with a recovery's first hole
 * (repair_budget_add), and any new hole ends a timeout's sweep (timer_sweep_first_repairs). */
static void on_data_above_holes(pass *ps, int64_t d, int64_t lo, int64_t hi, int opened, int first) {
    direction_state *s = &ps->dirs[d];
    if (opened) s->timer_sweep_budget = -1;
    if (first) s->repair_budget_segments = 0;
    repair_budget_add(s, segments_of(hi - lo, s->mss));
}

/* Of a fill of rseg segments downstream, timer_resend when it came after a silence of the
 * minimum RTO or longer (it starts a timeout's sweep): how many segments the sender had
 * never repaired before the timeout. A timeout's sweep resends in sequence order what the
 * sender had sent and not heard of; the segments of its holes beyond the repairs the sender
 * could send before the timeout (repair_budget_add) were first sent again by the sweep, and
 * their lateness shows no lost repair (seen: 9-segment holes whose 7 and 6 segments above arrived
 * alone, the sender's 7 and 6 fast repairs lost with them, the last 2 and 3 segments first
 * repaired after the timeout). */
static int64_t timer_sweep_first_repairs(direction_state *s, int64_t rseg, int timer_resend) {
    if (timer_resend) {
        s->timer_sweep_budget = s->repair_budget_segments;
        s->timer_sweep_filled = 0;
    }
    if (s->timer_sweep_budget < 0 || rseg <= 0) return 0;
    int64_t left = s->timer_sweep_budget - s->timer_sweep_filled;
    int64_t repaired_before = left <= 0 ? 0 : left < rseg ? left : rseg;
    s->timer_sweep_filled = s->timer_sweep_filled < INT64_MAX - rseg ? s->timer_sweep_filled + rseg : INT64_MAX;
    return rseg - repaired_before;
}

/* How many repairs of a fill of rseg segments shown lost were lost (repairs_lost_count per
 * segment), timer_resend when it came after a silence of the minimum RTO or longer: a sender's
 * retransmission timeout resends the oldest unacknowledged segment alone (a window of one
 * segment, RFC 5681 3.1; Linux splits it off the head of its queue), so the timeouts after
 * the first that a hole waited are lost resends of that one segment, and only the first segment
 * of the timer's own resend has them. Every other segment was sent at most once before the
 * timeout, in the recovery the ACKs clocked, and the rest of the hole follows the timer's resend
 * as the ACKs open the window again (seen: a 9-segment hole repaired 632 ms after it opened
 * on a sub-millisecond path, whose head had lost a fast repair and a timeout's resend, and the
 * rest one fast repair or none). */
static int64_t repairs_lost_in_fill(int64_t timeouts, int64_t overtaken, int64_t rseg, int timer_resend) {
    int64_t once = repairs_lost_count(timeouts > 1 ? 1 : timeouts, overtaken);
    if (!timer_resend || rseg <= 0) return rseg * once;
    return repairs_lost_count(timeouts, overtaken) + (rseg - 1) * once;
}

/* Downstream, a repair [lo, ...) of packet i filling a hole: whether it belongs to the sender's
 * sweep of first repairs. A sender repairs the holes it marked lost in sequence order (Linux
 * walks its retransmission queue from the lowest, and marks lower data lost no later than
 * higher: RACK by send time, DupThresh by sequence), and a second repair of a hole leaves at
 * least a round trip after the first (the sender hears of the first one's loss from data sent
 * after it). So after a first repair of lower data, a repair that left less than a round trip
 * later (TSvals, counted at the slowest common tick, TSVAL_TICK_MAX_NS, against the shortest
 * round trip seen) is a first repair too: however long its hole was open, and whatever new
 * data arrived before it. A sender that marked many holes at once (a burst dropped at a full
 * queue) repairs them over several round trips as its window allows, and sends new data
 * between them (seen: Linux 6.12, BBR, three flows, a queue of up to a second: 20-segment
 * holes repaired 0.7-1.0 s after they opened, after new data that echoed ACKs that had
 * reported them). On a path shorter than two ticks the TSvals cannot tell, and this says
 * nothing (repair_left_unheard reads the TSecr instead). */
static int repair_sweep_continues(const pass *ps, int64_t d, int64_t i, int64_t lo) {
    const truth_input *in = ps->in;
    const direction_state *s = &ps->dirs[d];
    if (!in->has_ts[i] || !s->last_repair_has_ts || s->last_repair_lost || s->last_repair_end > lo) return 0;
    int64_t rtt_ticks = path_min_rtt_ns(ps, d) / TSVAL_TICK_MAX_NS;
    int32_t ticks = (int32_t)(in->tsval[i] - s->last_repair_tsval);
    return ticks >= 0 && ticks < rtt_ticks;
}

/* The newest TSval the peer had sent by at_ns, as this capture saw its packets (*tsval); 0 when
 * none it remembers was sent that early. */
static int peer_tsval_as_of(const direction_state *p, int64_t at_ns, uint32_t *tsval) {
    const sent_tsval_ring *r = &p->tsvals_sent;
    int lo = 0, hi = r->len; /* first sent times rise with the values: the last at or before at_ns */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (r->at[(r->head + mid) % SENT_TSVAL_RING].first_ns <= at_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) return 0;
    *tsval = r->at[(r->head + lo - 1) % SENT_TSVAL_RING].tsval;
    return 1;
}

/* The TSval of the peer's first packet this capture saw at or after at_ns (*tsval): one it was
 * still sending then, or the next; 0 when it sent none that late (as far as the ring holds). */
static int peer_tsval_from(const direction_state *p, int64_t at_ns, uint32_t *tsval) {
    const sent_tsval_ring *r = &p->tsvals_sent;
    int lo = 0, hi = r->len; /* first sent times rise with the values: the first after at_ns */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (r->at[(r->head + mid) % SENT_TSVAL_RING].first_ns < at_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && r->at[(r->head + lo - 1) % SENT_TSVAL_RING].last_ns >= at_ns) lo--;
    if (lo == r->len) return 0;
    *tsval = r->at[(r->head + lo) % SENT_TSVAL_RING].tsval;
    return 1;
}

/* Downstream, the repair in packet i of the hole h: whether it left before the sender can have
 * heard that an earlier repair of it was lost. Short of a timeout, a sender repairs a hole on an
 * ACK the receiver sent once the hole was open (or, a repair of lower data having passed just
 * before, once the data below it arrived), so data it sent after a first repair echoes a TSval
 * no older than the receiver's newest then (opened_echo); it hears that first repair lost from
 * an ACK of such data (RACK, RFC 8985), which the receiver sent after the first of that data
 * arrived (echoed_after_ns). A repair whose TSecr echoes a TSval older than the receiver's first packet
 * seen from then on carried (or, when none was seen yet, its newest before) is a first repair,
 * however late after new data: a RACK timer that waits a clock tick (4 ms at HZ=250) past a
 * round trip shorter than that, or a sender the host kept waiting. Reads the receiver's clock
 * against arrivals here, as repair_left_unheard does. */
static int repair_left_before_heard(const pass *ps, int64_t d, int64_t i, const hole *h) {
    const truth_input *in = ps->in;
    uint32_t heard;
    const direction_state *p = &ps->dirs[d ^ 1];
    if (!in->has_ts[i] || in->tsecr[i] == 0 || h->echoed_after_ns < 0 ||
        !(peer_tsval_from(p, h->echoed_after_ns, &heard) || peer_tsval_as_of(p, h->echoed_after_ns, &heard)))
        return 0;
    return (int32_t)(in->tsecr[i] - heard) < 0;
}

/* Downstream, a repair [lo, ...) of packet i filling a hole, idle_ns after the direction last
 * moved: whether it belongs to the sender's sweep of first repairs by what the sender had heard.
 * The sender repairs the holes it marked in sequence order (repair_sweep_continues), so the first
 * repair of a hole above the latest first repair seen here (the sweep's) left after that one;
 * it is known lost only from an ACK of data sent after it (RACK), which the receiver sent after
 * that latest first repair arrived (one reordering extent before, on a path that reorders), or
 * at a retransmission timeout (a silence of one). A repair whose TSecr echoes a TSval older than
 * the newest the receiver had sent by then left before the sender heard any such ACK: a first
 * repair. This reads the receiver's clock against arrivals here, not the TSval tick against the
 * round trip, so it holds on paths shorter than a tick, where the sender's TSvals cannot tell:
 * there a burst lost whole (a TSO super-segment) is repaired over round trips a queue makes
 * longer than a tick, and new data sent between the repairs arrives before the higher ones. */
static int repair_left_unheard(const pass *ps, int64_t d, int64_t i, int64_t lo, int64_t idle_ns) {
    const truth_input *in = ps->in;
    const direction_state *s = &ps->dirs[d];
    uint32_t heard;
    if (!in->has_ts[i] || in->tsecr[i] == 0 || s->sweep_end < 0 || s->sweep_end > lo || idle_ns >= RTO_MIN_NS ||
        !peer_tsval_as_of(&ps->dirs[d ^ 1], ns_before(s->sweep_ns, reorder_extent_ns(s)), &heard))
        return 0;
    return (int32_t)(in->tsecr[i] - heard) < 0;
}

/* ---- the receiver's PAWS check, seen downstream ---- */

/* Whether [lo, hi) holds data not seen here before (in a hole, or above the highest). */
static int paws_missing(const direction_state *s, int64_t lo, int64_t hi) {
    return hi > s->hi_end || hole_bytes_within(s, lo, hi) > 0;
}

/* Downstream of the sender (at the receiver, in path) on data [lo, hi) of packet i with a
 * timestamp, before it updates the holes: a receiver that uses timestamps discards a segment
 * whose TSval is older than its ts_recent by more than PAWS_WINDOW_TICKS (RFC 7323 5.3), and
 * only data that reaches its left edge moves ts_recent, and only forward (RFC 7323 4.3). The
 * edge here: the lowest hole, or the highest data, or below them data the receiver discarded
 * and has not had again, or the peer's cumulative ACK when higher than all of those. A
 * segment that ends below that cumulative ACK moves nothing: Linux drops it as old
 * (tcp_sequence: end_seq before rcv_wup, the sequence its last ACK acknowledged) before
 * tcp_replace_ts_recent reads its timestamp; a spurious repeat of acknowledged data leaves
 * ts_recent where it was (checked segment by segment against what the receiver's own ACKs
 * show it discarded, on Linux 6.12 through a reordering path). So on a
 * path that reorders, a first copy that a repair of lower data overtook arrives and is
 * dropped: not a loss on the path, and its repeat was needed. The discarded segments are
 * counted (S_PAWS_DISCARDS) and their ranges remembered (paws_discarded). */
static void on_paws_check(pass *ps, int64_t d, int64_t i, int64_t lo, int64_t hi) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    if (in->mode[d] == TRUTH_MODE_SENDER || !in->has_ts[i]) return;
    uint32_t tsval = in->tsval[i];
    if (s->paws_valid && (int32_t)(s->paws_tsval - tsval) > PAWS_WINDOW_TICKS) {
        stats_of(ps, d)[S_PAWS_DISCARDS] += segments_of(hi - lo, s->mss);
        int slot = ring_push(&s->paws_next, &s->paws_len, PAWS_DISCARDS_RECENT);
        s->paws_lo[slot] = lo;
        s->paws_hi[slot] = hi;
        s->paws_open[slot] = paws_missing(s, lo, hi);
        return;
    }
    int64_t edge = s->nholes > 0 ? s->holes[0].lo : s->hi_end;
    for (int j = 0; j < s->paws_len; j++) {
        if (!s->paws_open[j]) continue;
        if ((lo <= s->paws_lo[j] && hi >= s->paws_hi[j]) || (s->have_una && s->snd_una >= s->paws_hi[j]))
            s->paws_open[j] = 0; /* had again */
        else if (s->paws_lo[j] < edge)
            edge = s->paws_lo[j];
    }
    if (s->have_una && s->snd_una > edge) edge = s->snd_una;
    int ends_below_ack = s->have_una && hi < s->snd_una;
    if (lo <= edge && !ends_below_ack && (!s->paws_valid || (int32_t)(tsval - s->paws_tsval) > 0)) {
        s->paws_tsval = tsval;
        s->paws_valid = 1;
    }
}

/* Whether [lo, hi) overlaps a range the receiver's PAWS check recently discarded. */
static int paws_discarded(const direction_state *s, int64_t lo, int64_t hi) {
    for (int j = 0; j < s->paws_len; j++)
        if (lo < s->paws_hi[j] && hi > s->paws_lo[j]) return 1;
    return 0;
}

/* The segments of the fill f that data [lo, hi) overlaps, taken back from those it counted lost
 * (each once): its hole was no loss. */
static int64_t fill_taken_back(repair_fill *f, int64_t lo, int64_t hi, int64_t mss) {
    int64_t olo = lo > f->lo ? lo : f->lo, ohi = hi < f->hi ? hi : f->hi;
    int64_t segments = segments_of(ohi - olo, mss);
    if (segments > f->segments_lost) segments = f->segments_lost;
    f->segments_lost -= segments;
    return segments;
}

/* Downstream, data [lo, hi) of packet i that fills no hole: whether it is the original of holes
 * that repairs filled before it arrived. Its TSval is older than the data that revealed the
 * hole, so it left before the sender could know of the hole, and before any repair of it. On a
 * path that reorders, a repair overtakes a late original (the receiver then discards the
 * original by PAWS, or reports it twice); the hole was no loss, and its count is taken back,
 * once. */
static int late_original_after_repair(pass *ps, int64_t d, int64_t i, int64_t lo, int64_t hi) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    if (!in->has_ts[i]) return 0;
    int64_t taken_back = 0;
    for (int j = 0; j < s->repair_fills_len; j++) {
        repair_fill *f = &s->repair_fills[j];
        if (f->segments_lost <= 0 || lo >= f->hi || hi <= f->lo || (int32_t)(in->tsval[i] - f->reveal_tsval) >= 0)
            continue;
        taken_back += fill_taken_back(f, lo, hi, s->mss);
    }
    stats_of(ps, d)[S_HOLE_FILL_RETRANS] -= taken_back;
    return taken_back > 0;
}

/* Downstream, data [lo, hi) of packet i seen here before: whether the copy that filled its hole
 * was the original, late, and this the sender's repair of it. On a path whose round trip is
 * under a TSval tick and that reorders (reorder_extent_ns), a late original carries the TSval
 * tick of the data that revealed its hole, as a repair sent within that tick does; a repair
 * that then arrives with a newer TSval is the sender's, sent because the late original had
 * not arrived when its reordering window ran out, and both copies passed here: the hole was no
 * loss, and its count is taken back, once. (A repair lost downstream and repaired again leaves
 * the same pair: rarer on such a path; seen: IPv6 at 1.3 Gbit/s, 0.5% loss, of the fills
 * followed by a newer copy here, 112 late originals against 8 repairs, by the sender's
 * capture.) */
static int repair_of_late_original(pass *ps, int64_t d, int64_t i, int64_t lo, int64_t hi) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    int64_t rtt_ns = path_min_rtt_ns(ps, d);
    if (!in->has_ts[i] || reorder_extent_ns(s) == 0 || rtt_ns <= 0 || rtt_ns >= TSVAL_TICK_NS) return 0;
    int64_t taken_back = 0;
    for (int j = 0; j < s->repair_fills_len; j++) {
        repair_fill *f = &s->repair_fills[j];
        if (f->segments_lost <= 0 || lo >= f->hi || hi <= f->lo || f->fill_tsval != f->reveal_tsval ||
            (int32_t)(in->tsval[i] - f->fill_tsval) <= 0)
            continue;
        taken_back += fill_taken_back(f, lo, hi, s->mss);
    }
    stats_of(ps, d)[S_HOLE_FILL_RETRANS] -= taken_back;
    return taken_back > 0;
}

static int retransmission_kind(direction_state *s, int64_t lo, int64_t hi, int64_t idle_ns) {
    if (s->recovery_kind == TRUTH_KIND_RETRANS_RTO) return TRUTH_KIND_RETRANS_RTO;
    if (lo <= s->snd_una && idle_ns >= RTO_MIN_NS) {
        s->recovery_kind = TRUTH_KIND_RETRANS_RTO;
        s->recovery_point = s->hi_end;
        return TRUTH_KIND_RETRANS_RTO;
    }
    if (s->recovery_kind == TRUTH_KIND_RETRANS_FAST) return TRUTH_KIND_RETRANS_FAST;
    if (s->dupacks > 0 || s->sack_evidence) {
        s->recovery_kind = TRUTH_KIND_RETRANS_FAST;
        s->recovery_point = s->hi_end;
        return TRUTH_KIND_RETRANS_FAST;
    }
    return hi >= s->hi_end ? TRUTH_KIND_RETRANS_TLP : TRUTH_KIND_RETRANS_OTHER;
}

/* Downstream, a late original filling the hole h, open hole_age_ns, arriving now: its lag is
 * how far this path reorders (reorder_extent_ns), and the sender saw it as reordering when the
 * receiver had ACKed data above the hole before it arrived (or the capture cannot tell). */
static void on_late_original(direction_state *s, const hole *h, int64_t hole_age_ns, int64_t now) {
    s->reorder_lag_ns[ring_push(&s->reorder_lag_next, &s->reorder_lag_len, REORDER_LAGS_RECENT)] = hole_age_ns;
    if (peer_acked_between(s, h->created_ns, now) != 0) s->sender_saw_reordering = 1;
}

/* Downstream, a repeat starting at lo: the holes below it whose repair it overtook
 * (repairs_overtaken; on a path that reorders, repairs_overtaken_shown reads it). */
static void repair_overtakes(pass *ps, int64_t d, int64_t i, int64_t lo) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    const direction_state *p = &ps->dirs[d ^ 1];
    if (s->nholes == 0 || s->holes[0].hi > lo || !in->has_ts[i] || in->tsecr[i] == 0 || p->tsvals_sent.len == 0 ||
        s->recent_rtt_len == 0)
        return;
    const sent_tsval *echoed = sent_tsval_find(&p->tsvals_sent, in->tsecr[i]);
    if (echoed != NULL)
        repairs_overtaken(s, echoed->first_ns, known_lost_wait_ns(s), in->ts_ns[i], lo, sack_off(in, d));
}

/* Without SACK, the repair at i left a tick or more after the one that ended where it begins (their
 * TSvals differ): after a timeout the sender resends everything in slow start, each round trip's
 * burst a first repair of its segments, not the rest of the late one before it (whose flag a burst
 * sent at once, as TSO does, shares). */
static int repair_burst_after(const pass *ps, int64_t d, int64_t i) {
    const direction_state *s = &ps->dirs[d];
    return sack_off(ps->in, d) && ps->in->has_ts[i] && s->last_repair_has_ts &&
           ps->in->tsval[i] != s->last_repair_tsval;
}

/* Without SACK, a repair that filled the front of the lowest hole up to hi: the partial ACK it
 * draws tells the sender of the next segment, and the repair that follows is that segment's
 * first (RFC 6582); new data the same ACK let out may arrive ahead of it (seen after a timeout:
 * the timer's resend of a 13-segment burst lost whole, its partial ACK, one new segment, then
 * the next repair; each of the other 12 repairs had counted as the second of a lost one). */
static void rest_of_hole_due(direction_state *s, int64_t hi, int64_t now) {
    if (s->nholes > 0 && s->holes[0].lo == hi) s->holes[0].front_filled_ns = now;
}

/* Without SACK, whether the repair of the hole h, arriving idle_ns after the data before it,
 * shows the sender had resent h before its retransmission timer fired: a hole of one segment
 * above every recovery begun before it (newreno_open_below) that then had DupThresh duplicate
 * ACKs as the lowest (dupthresh_ns) was fast retransmitted, so a repair after a silence of a
 * timeout or longer resends a repair the path lost (seen: IPv6, no timestamps, 1% loss: holes
 * whose fast repair was lost, resent 205-212 ms later). A hole that opened just above a recovery
 * may sit at its recover, where the sender holds the recovery and leaves the hole to its timer
 * (seen: such holes' first copies resent by the timer alone, 0.6-1.2 ms after the recovery
 * began); a hole of several segments (a burst lost whole) is repaired a segment per partial ACK.
 * Both leave the first repair to the timer. */
static int newreno_repaired_before(const hole *h, int64_t mss, int64_t idle_ns) {
    return h->open_below && h->dupthresh_ns >= 0 && mss > 0 && h->opened_bytes <= mss && idle_ns >= RTO_MIN_NS;
}

/* The highest cumulative ACK at or below `at` that the peer sent since it first reached `since`:
 * where a sender resending in order from `since` can have moved on to; `since` itself when
 * none, and INT64_MAX when the ACKs remembered (the latest SWEEP_RECENT) do not reach back so
 * far (the oldest is above `since`). */
static int64_t acked_at_most(const sweep_state *w, int64_t since, int64_t at) {
    int64_t best = since, oldest = INT64_MAX;
    for (int j = 0; j < w->acks_len; j++) {
        if (w->acks[j] < oldest) oldest = w->acks[j];
        if (w->acks[j] <= at && w->acks[j] > best) best = w->acks[j];
    }
    return w->acks_len == SWEEP_RECENT && oldest > since ? INT64_MAX : best;
}

/* Downstream, without SACK, a repeat [lo, hi) arriving (before the hole it fills is cut): whether
 * it continues a retransmission timeout's sweep, and what that sweep shows lost. After a timeout
 * a sender without SACK marks all it had in flight lost and resends it in order from its
 * cumulative ACK up (go-back-N; Linux: tcp_enter_loss, then tcp_xmit_retransmit_queue), new data
 * possibly between; an ACK that covers more than it resent moves it on to the ACK's value. So in
 * a sweep begun by a repeat after a silence of the minimum RTO, or by the fill of a hole that
 * old, a repeat that skips ahead of the sweep's highest, and of the highest ACK of the peer at or
 * below it, shows the copies in between lost on the way, less any hole's bytes (a hole counts
 * its own loss): copies of data the receiver had, which leave no hole (seen: BBR over IPv6
 * without SACK or timestamps, 10 of 83 losses, all missing from such sweeps at the receiver and
 * router-out). A sweep's copy that shows up later (reordered) takes its gap back; a repeat more
 * than a minimum RTO after the sweep's last one ends it. Returns the segments it counts lost
 * (less those taken back). */
static int64_t timeout_sweep_gap(pass *ps, int64_t d, int64_t i, int64_t lo, int64_t hi, int64_t idle_ns) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    int64_t now = in->ts_ns[i], lost = 0;
    sweep_state *w = s->sweep;
    if (in->mode[d] == TRUTH_MODE_SENDER || !sack_off(in, d) || s->mss <= 0 || w == NULL) return 0;
    for (int j = 0; j < w->gaps_len; j++) {
        int64_t L = w->gap_lo[j] > lo ? w->gap_lo[j] : lo, R = w->gap_hi[j] < hi ? w->gap_hi[j] : hi;
        if (R <= L) continue;
        int64_t late = R - L - hole_bytes_within(s, L, R);
        if (late > 0) lost -= segments_of(late, s->mss); /* a copy of the gap, late: not lost */
        if (L == w->gap_lo[j]) /* what is left of the gap above the copy (a copy inside it: below) */
            w->gap_lo[j] = R;
        else
            w->gap_hi[j] = L;
    }
    int begins = idle_ns >= RTO_MIN_NS;
    for (int j = 0; j < s->nholes && !begins && s->holes[j].lo < hi; j++)
        if (s->holes[j].hi > lo && now - s->holes[j].created_ns >= RTO_MIN_NS) begins = 1;
    /* the fill of a younger hole is no copy of the sweep to judge (a late original, a fast
     * repair, or the sweep moved on to the ACK standing at it): the sweep goes on above it */
    if (!begins && hole_bytes_within(s, lo, hi) > 0) {
        if (w->next >= 0 && hi > w->next) w->next = hi;
        return lost;
    }
    if (begins || w->next < 0 || now - w->ns >= RTO_MIN_NS) {
        w->next = begins ? hi : -1;
        w->ns = now;
        w->gaps_len = w->gaps_next = 0;
        return lost;
    }
    int64_t from = acked_at_most(w, w->next, lo);
    if (lo > from) {
        int64_t gap = lo - from - hole_bytes_within(s, from, lo);
        if (gap > 0) {
            lost += segments_of(gap, s->mss);
            int at = ring_push(&w->gaps_next, &w->gaps_len, SWEEP_RECENT);
            w->gap_lo[at] = from;
            w->gap_hi[at] = lo;
        }
    }
    if (hi > w->next) w->next = hi;
    w->ns = now;
    return lost;
}

/* Data at or below the highest sequence seen: a hole filled, a retransmission, or a
 * late original. */
static void on_repeat(pass *ps, int64_t d, int64_t i, int64_t lo, int64_t hi, int64_t idle_ns) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    int64_t *S = stats_of(ps, d);
    int64_t len = hi - lo, now = in->ts_ns[i];
    int8_t m = in->mode[d];
    int64_t newpart = hi > s->hi_end ? hi - s->hi_end : 0;
    if (newpart > 0) {
        S[S_UNIQUE_BYTES] += newpart;
        s->hi_end = hi;
        s->hi_end_ns = now;
    }
    if (idle_ns >= RTO_MIN_NS) timeout_seen(s, now);
    /* downstream, a timeout's resend starts its sweep even where it fills nothing (its head was
     * repeated after an ACK that came late or was lost): the fills after it are the sweep's */
    if (idle_ns >= RTO_MIN_NS && m != TRUTH_MODE_SENDER) timer_sweep_first_repairs(s, 0, 1);
    int spurious = 0, reordered = 0, filled = 0, downstream = 0;
    int64_t hole_age_ns = -1, filled_bytes = 0;
    hole filled_hole = {0};
    if (m != TRUTH_MODE_SENDER) {
        S[S_LOST_REPAIRS] += timeout_sweep_gap(ps, d, i, lo, hi, idle_ns);
        repair_overtakes(ps, d, i, lo);
        hole h;
        int found;
        int64_t cut = holes_cut(ps, s, lo, hi, &h, &found);
        if (cut > 0 && sack_off(in, d)) rest_of_hole_due(s, hi, now);
        if (s->nholes > 0 && s->holes[0].lowest_ns < 0) s->holes[0].lowest_ns = now;
        if (cut > 0) {
            filled = 1;
            filled_bytes = cut;
            S[S_UNIQUE_BYTES] += cut;
            reordered = fills_as_reordered(ps, d, i, &h);
            hole_age_ns = now > h.created_ns ? now - h.created_ns : 0; /* clock stepped back: 0 */
            filled_hole = h;
            if (hole_age_ns >= RTO_MIN_NS) timeout_seen(s, now);
            if (reordered) {
                on_late_original(s, &h, hole_age_ns, now);
                s->late_fill_end = hi;
            }
        } else if (late_original_after_repair(ps, d, i, lo, hi)) {
            reordered = 1;
        } else if (m == TRUTH_MODE_RECEIVER) {
            repair_of_late_original(ps, d, i, lo, hi);
            /* the receiver already had all of it, unless it discarded it (PAWS) */
            spurious = !paws_discarded(s, lo, hi);
        } else {
            /* in path: it passed here before; needed again unless the receiver had
             * acknowledged or SACKed it by now (then the repeat was not needed); lost
             * downstream unless the receiver discarded it (PAWS: not the path's loss) */
            repair_of_late_original(ps, d, i, lo, hi);
            if (s->have_una && hi <= s->snd_una) spurious = 1;
            for (int j = 0; j < s->nsack && !spurious; j++)
                if (lo >= s->sack_lo[j] && hi <= s->sack_hi[j]) spurious = 1;
            if (!spurious && lo > s->snd_una && una_lost_before_here(ps, d)) spurious = 1;
            downstream = !spurious && !paws_discarded(s, lo, hi);
        }
    } else {
        /* next to the sender: data never seen here that left before the segment that showed
         * its gap is an original reordered on the way here, not a retransmission */
        if (s->nholes > 0) {
            hole h;
            int found;
            int64_t cut = holes_cut(ps, s, lo, hi, &h, &found);
            if (cut > 0) {
                S[S_UNIQUE_BYTES] += cut;
                reordered = cut == len - newpart &&
                            (fill_first_copy_next_to_sender(ps, d, i, &h) || fills_as_reordered(ps, d, i, &h));
            }
        }
        /* at the sender: already acknowledged or SACKed when sent */
        if (s->have_una && hi <= s->snd_una) spurious = 1;
        for (int j = 0; j < s->nsack && !spurious; j++)
            if (lo >= s->sack_lo[j] && hi <= s->sack_hi[j]) spurious = 1;
    }
    if (reordered) {
        ps->out->kind[i] = TRUTH_KIND_REORDERED;
        S[S_REORDERED] += segments_of(len, s->mss);
        return;
    }
    s->repair_seen_ns = now;
    s->repair_seen_tsval = in->tsval[i];
    s->repair_seen_has_ts = in->has_ts[i];
    int64_t rseg = segments_of(len - newpart, s->mss);
    int rk = retransmission_kind(s, lo, hi, idle_ns);
    S[S_RETRANS] += rseg;
    S[S_RETRANS_BYTES] += len - newpart;
    S[rk == TRUTH_KIND_RETRANS_FAST  ? S_RETRANS_FAST
      : rk == TRUTH_KIND_RETRANS_RTO ? S_RETRANS_RTO
      : rk == TRUTH_KIND_RETRANS_TLP ? S_RETRANS_TLP
                                     : S_RETRANS_OTHER] += rseg;
    if (filled) {
        /* the holes' segments it filled: a receiver's GRO can join a repair to resends of data
         * it already had (go-back-N after a timeout, without SACK), which fill nothing */
        int64_t fill_segs = segments_of(filled_bytes, s->mss);
        S[S_HOLE_FILL_RETRANS] += fill_segs;
        if (s->have_una && lo <= s->snd_una && s->snd_una < hi) s->una_hole_filled_here = 1;
        if (s->dupthresh_last_ns >= 0 && s->repair_after_dupthresh_ns < 0) s->repair_after_dupthresh_ns = now;
        if (in->has_ts[i] && filled_hole.has_ts) {
            int slot = ring_push(&s->repair_fills_next, &s->repair_fills_len, REPAIR_FILLS_RECENT);
            s->repair_fills[slot] = (repair_fill){lo, hi, fill_segs, filled_hole.reveal_tsval, in->tsval[i]};
        }
        ps->out->hole_age_ns[i] = hole_age_ns;
        /* filled below an earlier repair, or long after the hole opened: this hole's
         * first retransmission was lost */
        int skipped = s->retx_fill_lo >= 0 && hi <= s->retx_fill_lo && !repair_reordered(ps, d, i);
        /* later than a first repair can be: earlier ones were lost, one per timeout waited.
         * Without SACK a sender repairs the holes one partial ACK at a time, each once those
         * below it are filled (RFC 6582), and has no loss probe nor RACK (both need SACK): a
         * hole with fewer than DupThresh segments above it waits for the timeout, whose resend
         * is its first repair. So the wait counts from when the holes below were filled, less
         * the first timeout, unless the sender had resent it before (newreno_repaired_before). */
        int64_t timeouts;
        if (sack_off(in, d)) {
            int64_t since_ns = filled_hole.lowest_ns >= 0 && now > filled_hole.lowest_ns ? filled_hole.lowest_ns
                                                                                         : filled_hole.created_ns;
            timeouts = repair_timeouts_waited(s, now > since_ns ? now - since_ns : 0);
            if (timeouts > 0 && !newreno_repaired_before(&filled_hole, s->mss, idle_ns)) timeouts--;
        } else {
            timeouts = repair_timeouts_waited(s, hole_age_ns);
        }
        int late = timeouts > 0;
        /* the rest of a late repair (a burst of segments, as TSO sends them) is late too */
        int continues = s->last_repair_lost && lo == s->last_repair_end && !repair_burst_after(ps, d, i);
        /* the three signs below take new data sent once the sender had heard of the hole as sent
         * after its first repair: not so where this repair left before any ACK that could show
         * one lost */
        int first_by_echo = repair_left_before_heard(ps, d, i, &filled_hole);
        /* new data sent after this hole's first repair arrived while it was still open */
        int overtaken = !first_by_echo && lo < s->repair_lost_below &&
                        (filled_hole.known_lost_ns < 0 || now < filled_hole.known_lost_ns ||
                         ns_before(now, reorder_extent_ns(s)) >= filled_hole.known_lost_ns);
        /* without SACK a lost repair is resent by the retransmission timer only (the ACK stands at
         * the hole: no partial ACK, no SACK for RACK), so a hole filled within a minimum RTO of
         * opening had one repair, whatever new data overtook it (a sender that saw reordering
         * waits for more duplicate ACKs than DupThresh, and sends new data meanwhile) */
        if (sack_off(in, d) && hole_age_ns < RTO_MIN_NS) overtaken = 0;
        /* ... nor within a minimum RTO of a partial ACK reaching it (rest_of_hole_due) */
        if (sack_off(in, d) && filled_hole.front_filled_ns > 0 && now - filled_hole.front_filled_ns < RTO_MIN_NS)
            overtaken = 0;
        int marked = !first_by_echo && repair_after_marked(ps, d, &filled_hole, hole_age_ns, now);
        int sacked_past = repair_sacked_past(ps, d, &filled_hole, hole_age_ns, now) && !first_by_echo;
        if (marking_unseen(ps, d) && hole_age_ns < RTO_MIN_NS) overtaken = sacked_past = marked = 0;
        /* a first repair of the sender's sweep: none of the signs above counts */
        int sweep = !skipped && (repair_sweep_continues(ps, d, i, lo) || repair_left_unheard(ps, d, i, lo, idle_ns));
        /* a timeout's sweep: lateness and overtaking show nothing of the segments it first repaired */
        int timer_resend = idle_ns >= RTO_MIN_NS;
        int64_t first_repairs = timer_sweep_first_repairs(s, rseg, timer_resend);
        repair_budget_add(s, rseg);
        int waited = (late || continues || overtaken) && first_repairs < rseg;
        s->last_repair_lost = !sweep && (skipped || waited || sacked_past || marked);
        if (s->last_repair_lost) {
            /* the hole segments it filled (fill_segs), less those a timeout's sweep first repaired */
            int64_t unswept = rseg - first_repairs < fill_segs ? rseg - first_repairs : fill_segs;
            int64_t shown = skipped || sacked_past || marked ? fill_segs : unswept;
            count_lost_repairs(ps, d, i,
                               repairs_lost_in_fill(timeouts,
                                                    overtaken_repairs_lost(ps, d, &filled_hole, now, hole_age_ns),
                                                    shown, timer_resend));
        } else {
            s->sweep_end = hi;
            s->sweep_ns = now;
        }
        s->last_repair_end = hi;
        s->last_repair_tsval = in->tsval[i];
        s->last_repair_has_ts = in->has_ts[i];
        if (lo > s->retx_fill_lo) {
            s->retx_fill_lo = lo;
            s->retx_fill_tsval = in->tsval[i];
            s->retx_fill_has_ts = in->has_ts[i];
        }
    }
    if (downstream) S[S_DOWNSTREAM_RETRANS] += rseg;
    ps->out->kind[i] = spurious ? TRUTH_KIND_SPURIOUS : (uint8_t)rk;
    if (spurious) S[S_SPURIOUS] += rseg;
    if (hi > s->karn_hi) s->karn_hi = hi;
    if (s->retx_len == RETX_RING) {
        s->retx_head = (s->retx_head + 1) % RETX_RING;
        s->retx_len--;
    }
    if (s->have_una && lo <= s->snd_una && s->snd_una < hi) s->repeat_at_una_ns = now;
    s->retx[(s->retx_head + s->retx_len) % RETX_RING] =
        (retx_entry){lo, hi, i, spurious, downstream, spurious ? segments_of(hi - lo, s->mss) : 0, 0};
    s->retx_len++;
}

/* Data after a silence with nothing unacknowledged that follows the direction's first
 * message: the application waited before its transfer began (iperf3 sends each stream a
 * cookie, then waits for the server's TEST_START, one to two round trips after the last
 * stream's cookie; a client's greeting, then the server's turn). The transfer begins with
 * this data: S_IDLE_NS is the time from the first data to it (the message, its repairs if it
 * was lost, and the wait); a further wait while the direction has still sent no more than a
 * segment (a control connection's exchange of short messages) adds its silence. A wait that
 * TCP calls idle (over an RTO, RFC 5681 4.1) counts before any data; a shorter one counts
 * before a full segment, the bulk beginning: with an RTO's floor alone, the 1-2 round trips
 * after iperf3's cookie stayed in the transfer on paths under ~90 ms (1.2% of a 10 s test at
 * 60 ms), and in a multi-flow transfer the last stream's span started up to 150 ms before the
 * transfer's data. A short wait before another short message is a request and its reply, not
 * a transfer's start. Later silences stay in the transfer's time, as an application's own
 * stalls do in its rate. At the sender nothing unacknowledged means nothing in flight;
 * downstream a first flight lost whole before a timeout looks the same, so there the message
 * must also end short of a full segment. */
static void on_data_after_idle(pass *ps, int64_t d, int64_t i) {
    const direction_state *s = &ps->dirs[d];
    const int64_t *S = stats_of(ps, d);
    int64_t silence_ns = ps->in->ts_ns[i] - s->last_tx_ns;
    if (S[S_DATA_PACKETS] <= 1 || s->mss <= 0 || S[S_UNIQUE_BYTES] > s->mss || !s->have_una || s->snd_una < s->hi_end ||
        silence_ns <= 0)
        return;
    if (silence_ns <= IDLE_NS && ps->in->payload_len[i] < s->mss) return;
    if (ps->in->mode[d] != TRUTH_MODE_SENDER && s->last_tx_len % s->mss == 0) return;
    int64_t *idle_ns = &stats_of(ps, d)[S_IDLE_NS];
    int64_t before_ns = ps->in->ts_ns[i] - S[S_FIRST_DATA_TS];
    if (*idle_ns == 0 && before_ns > 0)
        *idle_ns = before_ns;
    else
        *idle_ns += silence_ns;
}

/* The shortest silence downstream before a timeout's resend: a sender's RTO is above its
 * smoothed RTT (RFC 6298 2.3: SRTT + max(G, 4 RTTVAR); Linux adds at least its 200 ms
 * floor), so on a path longer than a few ms an ACK-clocked sender's gap between flights (a
 * round trip less the flight's own time: slow start, a small window) is shorter. The path's
 * minimum RTT here, or the handshake's, keeps the rule off those gaps. */
static int64_t timeout_silence_min_ns(const pass *ps, int64_t d) {
    int64_t rtt_ns = path_min_rtt_ns(ps, d);
    return rtt_ns > 0 && rtt_ns < INT64_MAX - RTO_MIN_NS ? RTO_MIN_NS + rtt_ns : RTO_MIN_NS;
}

/* In-order data downstream after a silence longer than the minimum RTO plus the RTT
 * (timeout_silence_min_ns) that followed a full segment, with everything received
 * acknowledged and the transfer under way (past its first message): the sender's
 * retransmission timeout resent the oldest segment it had sent, and that one had been lost
 * with everything after it, leaving no hole (a tail loss probe sent before the timeout was
 * lost too, or the sender was in recovery and sent none). The silence is not the
 * application's (on_data_after_idle). A timeout's resend leaves the same wait after the data
 * before it did (the ACK of that data came a round trip after it, and the timer ran from
 * there), and its TSval shows that (counted at the slowest common tick, TSVAL_TICK_MAX_NS):
 * data stamped sooner was sent without the wait, and the silence was the path's or the
 * capture's (a stalled host or queue: seen under QEMU, 0.4-0.6 s of silence at the receiver
 * after the sender's data 0-104 ms apart). Called before the packet updates the direction's
 * state. */
static int resent_by_timeout(const pass *ps, int64_t d, int64_t i, int64_t lo) {
    const truth_input *in = ps->in;
    const direction_state *s = &ps->dirs[d];
    const int64_t *S = stats_of(ps, d);
    if (in->has_ts[i] && s->hi_end_has_ts &&
        (int32_t)(in->tsval[i] - s->hi_end_tsval) < timeout_silence_min_ns(ps, d) / TSVAL_TICK_MAX_NS)
        return 0;
    return in->mode[d] != TRUTH_MODE_SENDER && lo == s->hi_end && s->nholes == 0 && s->mss > 0 &&
           in->payload_len[i] <= s->mss && S[S_DATA_PACKETS] > 1 && S[S_UNIQUE_BYTES] > s->mss && s->have_una &&
           s->snd_una >= s->hi_end && in->ts_ns[i] - s->last_tx_ns > timeout_silence_min_ns(ps, d) &&
           s->last_tx_len % s->mss == 0;
}

/* Data right after what resent_by_timeout took for a timeout's resend (packet r), in order and
 * sent before the sender had heard any newer ACK (its TSecr is r's own): a sender whose timer
 * fired sends one segment and waits for its ACK (its window is one segment: RFC 5681 3.1,
 * Linux's tcp_enter_loss; a loss probe is one segment too), so two sent back to back after the
 * silence were new data after a silence of the sender's own, and nothing was lost (iperf3 -P
 * writing to one stream while its other stream had nothing in flight: 290-300 ms of silence
 * when a bottleneck's rate fell to 5 Mbit/s). Called before the packet updates the direction's
 * state. */
static int timeout_resend_disproved(const pass *ps, int64_t d, int64_t i, int64_t lo) {
    const truth_input *in = ps->in;
    const direction_state *s = &ps->dirs[d];
    int64_t r = s->timeout_resend_i;
    return s->timeout_probe_pending && r >= 0 && lo == s->hi_end && in->has_ts[i] && in->has_ts[r] &&
           in->tsecr[i] == in->tsecr[r];
}

/* Takes back what on_timeout_resend counted for packet r, new data after all. */
static void undo_timeout_resend(pass *ps, int64_t d, int64_t r) {
    const direction_state *s = &ps->dirs[d];
    int64_t *S = stats_of(ps, d);
    int64_t len = ps->in->payload_len[r];
    ps->out->kind[r] = TRUTH_KIND_ORIGINAL;
    ps->out->hole_age_ns[r] = -1;
    S[S_RETRANS]--;
    S[S_RETRANS_RTO]--;
    S[S_RETRANS_BYTES] -= len < s->mss ? len : s->mss;
    S[S_HOLE_FILL_RETRANS]--;
}

/* The timeout's retransmission (resent_by_timeout): its first segment fills a hole of its
 * own; whatever else the lost window held is not seen here. */
static void on_timeout_resend(pass *ps, int64_t d, int64_t i, int64_t silence_ns) {
    const direction_state *s = &ps->dirs[d];
    int64_t *S = stats_of(ps, d);
    int64_t len = ps->in->payload_len[i];
    ps->out->kind[i] = TRUTH_KIND_RETRANS_RTO;
    ps->out->hole_age_ns[i] = silence_ns;
    S[S_RETRANS]++;
    S[S_RETRANS_RTO]++;
    S[S_RETRANS_BYTES] += len < s->mss ? len : s->mss;
    S[S_HOLE_FILL_RETRANS]++;
}

/* The data after a timeout's resend (resent_by_timeout), starting at lo: whether it shows the
 * loss probe lost with no hole of its own. A sender arms a tail loss probe before its
 * retransmission timeout (RFC 8985 7: one probe after about two round trips of silence, new
 * data when it may send some, else its highest segment again); the timeout fired, so that
 * probe was lost too. New data as probe: the sender resends it right after the timed-out
 * segment, in order, so it leaves no hole here; the oldest segment again as probe: a second
 * copy of it was lost. Either way one more segment was lost than the resend shows, unless
 * this data leaves a hole, which counts the probe itself. Called before the packet updates
 * the direction's state. */
static int timeout_probe_lost(const pass *ps, int64_t d, int64_t lo) {
    const direction_state *s = &ps->dirs[d];
    return ps->in->mode[d] != TRUTH_MODE_SENDER && s->timeout_probe_pending && lo == s->hi_end;
}

/* New data seen at the receiver or in path, against the ACK its TSecr echoes: a captured one
 * measures the bytes the sender had in flight past what that ACK reported; one the capture never
 * saw (newer than every TSval it saw from the peer) shows the capture missed the receiver's
 * ACKs, and that ACK reported about this data's end less that flight, left about a round trip
 * before this data arrived (CAPTURE_TAIL). */
static void on_data_echo(pass *ps, int64_t d, int64_t i, int64_t hi) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    const direction_state *p = &ps->dirs[d ^ 1];
    if (in->mode[d] < TRUTH_MODE_RECEIVER || !in->has_ts[i] || in->tsecr[i] == 0 || p->tsvals_sent.len == 0) return;
    const sent_tsval *newest = &p->tsvals_sent.at[(p->tsvals_sent.head + p->tsvals_sent.len - 1) % SENT_TSVAL_RING];
    int64_t now = in->ts_ns[i];
    if ((int32_t)(in->tsecr[i] - newest->tsval) <= 0) {
        const sent_tsval *echoed = sent_tsval_find(&p->tsvals_sent, in->tsecr[i]);
        if (echoed != NULL && echoed->reported_hi >= 0 && hi > echoed->reported_hi)
            s->echo_flight_bytes = hi - echoed->reported_hi;
        return;
    }
    s->unseen_echo_ns = now;
    if (s->echo_flight_bytes < 0) return;
    int64_t reported = hi - s->echo_flight_bytes;
    if (reported > s->unseen_echo_reported) {
        int64_t rtt_ns = path_min_rtt_ns(ps, d);
        s->unseen_echo_reported = reported;
        s->unseen_echo_reported_ns = rtt_ns > 0 && rtt_ns < now ? now - rtt_ns : now;
    }
}

/* Downstream, data of packet i with a TSecr newer than any before: the open holes whose opening
 * TSval it echoes (or a newer one) have their first data that can have left after the sender
 * heard of them (echoed_after_ns). Holes open in sequence order, each echo no older than the one
 * below it, so the newest are looked at first, down to one already marked (at most
 * ECHO_MARK_SCAN: a hole further down stays unmarked, and undecided). */
static void on_data_tsecr(pass *ps, int64_t d, int64_t i) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    if (in->mode[d] == TRUTH_MODE_SENDER || !in->has_ts[i] || in->tsecr[i] == 0) return;
    uint32_t tsecr = in->tsecr[i];
    if (s->data_tsecr_known && (int32_t)(tsecr - s->data_tsecr) <= 0) return;
    s->data_tsecr = tsecr;
    s->data_tsecr_known = 1;
    for (int j = s->nholes - 1, seen = 0; j >= 0 && seen < ECHO_MARK_SCAN; j--, seen++) {
        hole *h = &s->holes[j];
        if (h->echoed_after_ns >= 0) break;
        if (!h->opened_echo_known || (int32_t)(tsecr - h->opened_echo) >= 0) h->echoed_after_ns = in->ts_ns[i];
    }
}

/* This packet as data of its direction. */
static void on_data(pass *ps, int64_t d, int64_t i) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    int64_t *S = stats_of(ps, d);
    int64_t len = in->payload_len[i], now = in->ts_ns[i];
    if (len <= 0 || !s->have_ref) return;
    int64_t lo = unwrap32(s->hi_end, in->seq[i]) + ((in->tcp_flags[i] & TRUTH_TCP_SYN) ? 1 : 0);
    int64_t hi = lo + len;
    int64_t nseg = segments_of(len, s->mss);
    S[S_DATA_PACKETS]++;
    S[S_DATA_SEGMENTS] += nseg;
    S[S_PAYLOAD_BYTES] += len;
    if (len > S[S_MAX_PAYLOAD]) S[S_MAX_PAYLOAD] = len;
    if (nseg > 1) S[S_SUPER_SEGMENT_FRAMES]++;
    /* earliest and latest, not first and last in file order: clocks step back */
    if (S[S_FIRST_DATA_TS] < 0 || now < S[S_FIRST_DATA_TS]) S[S_FIRST_DATA_TS] = now;
    if (now > S[S_LAST_DATA_TS]) S[S_LAST_DATA_TS] = now;
    on_data_after_idle(ps, d, i);
    int timeout_resend = resent_by_timeout(ps, d, i, lo);
    if (timeout_resend_disproved(ps, d, i, lo)) {
        undo_timeout_resend(ps, d, s->timeout_resend_i);
        s->timeout_probe_pending = 0;
    }
    if (timeout_probe_lost(ps, d, lo)) count_lost_repairs(ps, d, i, 1);
    s->timeout_probe_pending = timeout_resend;
    s->timeout_resend_i = timeout_resend ? i : -1;
    int64_t silence_ns = now - s->last_tx_ns;
    int64_t idle_ref = s->last_tx_ns > s->last_adv_ns ? s->last_tx_ns : s->last_adv_ns;
    int64_t idle_ns = now - idle_ref;
    s->last_tx_ns = now;
    s->last_tx_len = len;
    on_paws_check(ps, d, i, lo, hi);
    on_data_tsecr(ps, d, i);

    if (lo >= s->hi_end) {
        on_data_echo(ps, d, i, hi);
        on_new_data(ps, d, i, lo, hi);
        if (timeout_resend) {
            on_timeout_resend(ps, d, i, silence_ns);
            timeout_seen(s, now);
        }
        if (in->mode[d] == TRUTH_MODE_SENDER) scoreboard_on_send(ps, d, i, lo, hi, 0);
    } else if (len == 1 && hi == s->hi_end && s->peer_window_known && s->peer_window == 0) {
        ps->out->kind[i] = TRUTH_KIND_WINDOW_PROBE; /* a one-byte zero-window probe: not loss */
        S[S_WINDOW_PROBES]++;
    } else {
        on_repeat(ps, d, i, lo, hi, idle_ns);
        if (in->mode[d] == TRUTH_MODE_SENDER)
            scoreboard_on_send(ps, d, i, lo, hi, ps->out->kind[i] != TRUTH_KIND_REORDERED);
    }

    /* bytes in flight after this segment: highest sent - cumulative ACK - SACKed */
    if (s->have_una) {
        int64_t flight = s->hi_end - s->snd_una;
        for (int j = 0; j < s->nsack; j++) {
            int64_t L = s->sack_lo[j] > s->snd_una ? s->sack_lo[j] : s->snd_una;
            int64_t R = s->sack_hi[j] < s->hi_end ? s->sack_hi[j] : s->hi_end;
            if (R > L) flight -= R - L;
        }
        ps->out->in_flight[i] = flight > 0 ? flight : 0;
    }
}

/* Whether data packet i of direction d, seen at the receiver or in path, came after a silence of
 * a retransmission timeout or longer since the direction's data before it
 * (timeout_silence_min_ns): its TSecr echoes an ACK that left before the silence, and the time
 * since is the sender's timer, not the path's round trip. Such a sample stays out of the recent
 * round trips the repair rules read (first_repair_within_ns): early in a transfer, before a few
 * round trips were sampled, one was their median (seen: IPv6, three flows, a queue overflowing
 * as they began: a 211 ms sample made a hole repaired at the timeout, 212 ms after it opened,
 * a first repair, where the sender's capture shows its fast repair lost). Called before the
 * packet updates the direction's state, its minimum round trip included (the first sample may
 * be such a wait). */
static int echo_after_timer_wait(const pass *ps, int64_t d, int64_t i) {
    const direction_state *s = &ps->dirs[d];
    return stats_of(ps, d)[S_DATA_PACKETS] > 0 && ps->in->ts_ns[i] - s->last_tx_ns >= timeout_silence_min_ns(ps, d);
}

/* Receiver-side RTT: the receiver's ACK TSval echoed in the data's TSecr. The sample
 * also keeps the data direction's minimum RTT, which tells a late original from a
 * retransmission where IP IDs and TSvals cannot (RTTs under the 1 ms TSval tick). */
static void on_timestamp_echo(pass *ps, int64_t d, int64_t i) {
    const truth_input *in = ps->in;
    if (!in->has_ts[i]) return;
    direction_state *s = &ps->dirs[d], *p = &ps->dirs[d ^ 1];
    /* as the receiver (the peer direction is seen at its receiver): record our TSval */
    if (in->mode[d ^ 1] >= TRUTH_MODE_RECEIVER && in->payload_len[i] == 0) {
        if (!s->tsv_last_valid || s->tsv_last != in->tsval[i]) {
            s->tsv_last = in->tsval[i];
            s->tsv_last_valid = 1;
            if (s->tsv_len == TSVAL_RING) {
                s->tsv_head = (s->tsv_head + 1) % TSVAL_RING;
                s->tsv_len--;
            }
            int at = (s->tsv_head + s->tsv_len) % TSVAL_RING;
            s->tsv[at] = in->tsval[i];
            s->tsv_ns[at] = in->ts_ns[i];
            s->tsv_len++;
        }
    }
    /* as the data sender seen from the receiver: our TSecr echoes the peer */
    if (in->mode[d] >= TRUTH_MODE_RECEIVER && in->payload_len[i] > 0 && in->tsecr[i] != 0) {
        while (p->tsv_len > 0 && (int32_t)(p->tsv[p->tsv_head] - in->tsecr[i]) < 0) {
            p->tsv_head = (p->tsv_head + 1) % TSVAL_RING;
            p->tsv_len--;
        }
        if (p->tsv_len > 0 && p->tsv[p->tsv_head] == in->tsecr[i]) {
            int64_t r = in->ts_ns[i] - p->tsv_ns[p->tsv_head];
            if (r >= 0) {
                ps->out->rtt_us[i] = (double)r / 1000.0;
                ps->out->rtt_direction[i] = (int32_t)d;
                int timer_wait = echo_after_timer_wait(ps, d, i);
                if (s->min_rtt_ns < 0 || r < s->min_rtt_ns) s->min_rtt_ns = r;
                if (!timer_wait) {
                    s->recent_rtt_ns[s->recent_rtt_next] = r;
                    s->recent_rtt_next = (s->recent_rtt_next + 1) % RECENT_RTT_SAMPLES;
                    if (s->recent_rtt_len < RECENT_RTT_SAMPLES) s->recent_rtt_len++;
                }
            }
            p->tsv_head = (p->tsv_head + 1) % TSVAL_RING;
            p->tsv_len--;
        }
    }
}

/* A packet of a direction whose peer's data is seen at its receiver or in path: remember
 * when each of its TSvals first left, for the TSecr of the data that echoes it. */
static void on_sent_tsval(pass *ps, int64_t d, int64_t i) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    if (!in->has_ts[i] || in->mode[d ^ 1] < TRUTH_MODE_RECEIVER) return;
    const direction_state *p = &ps->dirs[d ^ 1];
    if (sent_tsval_note(&s->tsvals_sent, in->tsval[i], in->ts_ns[i], p->reported_hi, p->marked_hi) < 0)
        ps->out_of_memory = 1;
}

/* How long after the receiver showed a hole open a sender has marked it lost (KNOWN_LOST_*):
 * RACK's reordering window and the recent round trips' spread, at least the floor. */
static int64_t known_lost_wait_ns(const direction_state *s) {
    int64_t rtt_min_ns = recent_rtt_min_ns(s), rtt_max_ns = recent_rtt_max_ns(s);
    /* RACK's reordering window: a quarter of the minimum round trip, and up to the smoothed round
     * trip (the longest recent one) once the sender saw reordering (Linux widens it a step per
     * recovery a D-SACK showed spurious) */
    int64_t reo_wnd_ns = s->sender_saw_reordering ? rtt_max_ns : rtt_min_ns / KNOWN_LOST_RTT_DIV;
    int64_t wait_ns = reo_wnd_ns + (rtt_max_ns - rtt_min_ns);
    return wait_ns < KNOWN_LOST_FLOOR_NS ? KNOWN_LOST_FLOOR_NS : wait_ns;
}

/* Whether the sender of the hole h marks its repairs lost as RACK does with no reordering seen, so
 * that each repair of it is followed closely by the next once data sent after it is reported: a hole
 * of one segment, whose first repair leaves as soon as the sender hears of data sent after the
 * segment, or a hole whose repair data already overtook (a generation counted: the sender was
 * repairing this hole), on a path whose sender saw no reordering. A hole of several segments before
 * that may be a burst the sender repairs piece by piece as its window allows (known_lost_wait_ns). */
static int repairs_follow_closely(const direction_state *s, const hole *h) {
    return (h->repairs_overtaken > 0 || h->opened_bytes <= s->mss) && !s->sender_saw_reordering;
}

/* How long after the receiver showed the hole open (its opening, then the arrival of data sent after
 * its latest repair: generation_ns) a sender that repairs_follow_closely has marked its latest copy
 * lost and sent the next: a Linux sender marks a copy lost once the ACK of data sent more than RACK's
 * reordering window after it comes (RFC 8985: a quarter of the minimum round trip where no reordering
 * was seen, Linux's windowed min_rtt; 0 in recovery), and repairs it before any new data. The data
 * that showed the hole open left after that copy, and its ACK left as it arrived. So the wait is that
 * window and the TSecr's tick (KNOWN_LOST_FLOOR_NS), not the recent round trips' spread, which stands
 * for the queue's growth while a burst waits for its first repairs (known_lost_wait_ns) and, at a
 * queue that fills and drains every round trip, is as long as the round trip itself: each repair lost
 * again counted a round trip late, one fewer per hole (seen: IPv6, BBR, a 5 ms tbf queue kept full,
 * a hole's repairs lost two to six times in a row, 5.1 ms apart; known_lost_wait_ns 3-6 ms). Never
 * longer than that wait (wait_ns). */
static int64_t next_generation_wait_ns(const direction_state *s, int64_t wait_ns) {
    int64_t reo_wnd_ns = s->min_rtt_ns > 0 ? s->min_rtt_ns / KNOWN_LOST_RTT_DIV : 0;
    int64_t next_ns = reo_wnd_ns > KNOWN_LOST_FLOOR_NS ? reo_wnd_ns : KNOWN_LOST_FLOOR_NS;
    return next_ns < wait_ns ? next_ns : wait_ns;
}

/* Data arriving now above `below` (new data, or the repair of a higher hole) that left after the
 * sender heard an ACK the receiver sent at echoed_ns (`lowest_only`: a connection without SACK,
 * whose sender knows of the lowest hole's segment it marked lost only, newreno_known_lost_hi):
 * each hole below it the receiver had shown
 * open at least wait_ns before that ACK had a repair sent before this data (a sender repairs the
 * holes it marked lost in sequence order, before new data), lost on the way; the ACK answering
 * this data shows it open again (REPAIR_GENERATIONS_SCAN). */
static void repairs_overtaken(direction_state *s, int64_t echoed_ns, int64_t wait_ns, int64_t now, int64_t below,
                              int lowest_only) {
    /* RACK needs SACK: without it a lost repair waits for the timer (overtaken_repairs_lost) */
    int64_t next_wait_ns = lowest_only ? wait_ns : next_generation_wait_ns(s, wait_ns);
    if (s->generation_due_ns >= 0 && echoed_ns - s->generation_due_ns < next_wait_ns) return; /* none due yet */
    int n = s->nholes < REPAIR_GENERATIONS_SCAN ? s->nholes : REPAIR_GENERATIONS_SCAN;
    if (lowest_only && n > 1) n = 1;
    int64_t due_ns = -1;
    for (int j = 0; j < n; j++) {
        hole *h = &s->holes[j];
        int64_t hole_wait_ns = repairs_follow_closely(s, h) ? next_wait_ns : wait_ns;
        if (h->hi <= below && echoed_ns - h->generation_ns >= hole_wait_ns &&
            (!lowest_only || s->repair_lost_below > h->lo)) {
            h->repairs_overtaken++;
            h->generation_ns = now;
        }
        if (due_ns < 0 || h->generation_ns < due_ns) due_ns = h->generation_ns;
    }
    s->generation_due_ns = due_ns;
}

/* Without SACK, what of the lowest hole its sender knows lost: the segment at its peer's cumulative
 * ACK, no more (RFC 6582 repairs one segment per partial ACK). A hole of several segments (a
 * super-segment the path dropped whole) is repaired a segment per round trip, and new data passes
 * the rest of it on the way as it should: only a repair of its lowest segment that such data
 * overtook was lost. */
static int64_t newreno_known_lost_hi(const direction_state *s) {
    const hole *h = &s->holes[0];
    return s->mss > 0 && h->hi - h->lo > s->mss ? h->lo + s->mss : h->hi;
}

/* New data seen at the receiver or in path: the holes the sender knew were lost when it sent
 * it (the ACK its TSecr echoes left well after they opened) had their repairs sent before
 * it; those still open were lost on the way. */
static void on_data_after_known_holes(pass *ps, int64_t d, int64_t i) {
    const truth_input *in = ps->in;
    direction_state *s = &ps->dirs[d];
    const direction_state *p = &ps->dirs[d ^ 1];
    if (s->nholes == 0 || !in->has_ts[i] || in->tsecr[i] == 0 || p->tsvals_sent.len == 0) return;
    const sent_tsval *echoed = sent_tsval_find(&p->tsvals_sent, in->tsecr[i]);
    if (echoed == NULL) return;
    if (echoed->reported_hi > s->echoed_reported_hi || echoed->marked_hi > s->echoed_marked_hi) {
        if (echoed->reported_hi > s->echoed_reported_hi) s->echoed_reported_hi = echoed->reported_hi;
        if (echoed->marked_hi > s->echoed_marked_hi) s->echoed_marked_hi = echoed->marked_hi;
        int slot = ring_push(&s->echoed_next, &s->echoed_len, ECHOED_RECENT);
        s->echoed_ns[slot] = in->ts_ns[i];
        s->echoed_reported_at[slot] = s->echoed_reported_hi;
        s->echoed_marked_at[slot] = s->echoed_marked_hi;
    }
    if (s->recent_rtt_len == 0) return;
    int64_t echoed_ns = echoed->first_ns;
    int64_t wait_ns = known_lost_wait_ns(s);
    /* holes are in sequence order, and so in the order they opened: skip those already
     * marked (binary search), then mark while the sender knew them */
    int lo = 0, hi = s->nholes;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (s->holes[mid].hi <= s->repair_lost_below)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* without SACK the sender knows of the lowest hole only (its peer's cumulative ACK stops
     * there); the holes above it it learns of one partial ACK at a time (RFC 6582), and of a
     * hole's segment once an ACK it heard reached it (newreno_known_lost_hi) */
    int lowest_only = sack_off(in, d);
    for (int j = lo; j < s->nholes && echoed_ns - s->holes[j].created_ns >= wait_ns; j++) {
        /* without SACK, the lowest hole once the sender had DupThresh duplicate ACKs at it */
        if (lowest_only && (j > 0 || s->holes[0].dupthresh_ns < 0 || echoed_ns < s->holes[0].dupthresh_ns ||
                            echoed->reported_hi < s->holes[0].lo))
            break;
        int64_t known_hi = lowest_only ? newreno_known_lost_hi(s) : s->holes[j].hi;
        if (known_hi <= s->repair_lost_below) break;
        s->repair_lost_below = known_hi;
        s->holes[j].known_lost_ns = in->ts_ns[i]; /* with the data that showed it */
        if (lowest_only) {                        /* the repairs counted from here on are of this segment */
            s->holes[j].repairs_overtaken = 0;
            s->holes[j].generation_ns = s->holes[j].created_ns;
            if (s->generation_due_ns < 0 || s->holes[j].created_ns < s->generation_due_ns)
                s->generation_due_ns = s->holes[j].created_ns;
        }
    }
    repairs_overtaken(s, echoed_ns, wait_ns, in->ts_ns[i], INT64_MAX, lowest_only);
}

/* The end of the pass for direction d: holes still open are path losses, or the capture's
 * (CAPTURE_TAIL_REPAIR_WAITS); what the peer acknowledged, extended where the capture missed its
 * last ACKs to what their echoes show, up to the first hole a path loss left; the path's
 * minimum round trip over the whole capture (S_PATH_MIN_RTT_NS, the one rule the pass and the
 * figures after it use). */
static void capture_tail(pass *ps, int64_t d) {
    direction_state *s = &ps->dirs[d];
    int64_t *S = stats_of(ps, d);
    int64_t rtt_ns = path_min_rtt_ns(ps, d);
    S[S_PATH_MIN_RTT_NS] = rtt_ns;
    int64_t wait_ns = rtt_ns > 0 && FIRST_REPAIR_RTTS * rtt_ns > RTO_MIN_NS ? FIRST_REPAIR_RTTS * rtt_ns : RTO_MIN_NS;
    int64_t unfilled = 0, path_hole_lo = -1;
    for (int j = 0; j < s->nholes; j++) {
        const hole *h = &s->holes[j];
        int missed_acks = s->unseen_echo_ns >= 0 && s->unseen_echo_ns >= h->created_ns;
        int ran_on = S[S_LAST_DATA_TS] - h->created_ns > CAPTURE_TAIL_REPAIR_WAITS * wait_ns;
        /* the peer's ACKs went on past the time a repair can come and never covered it: the
         * receiver lacked it, the capture did not miss it */
        int shown_missing = peer_ack_latest_ns(s) > h->created_ns + wait_ns;
        if (ps->in->mode[d] >= TRUTH_MODE_RECEIVER && !shown_missing && (missed_acks || ran_on)) {
            S[S_CAPTURE_GAP_BYTES] += h->hi - h->lo;
            S[S_CAPTURE_GAPS] += segments_of(h->hi - h->lo, s->mss);
        } else {
            unfilled += h->hi - h->lo;
            if (path_hole_lo < 0) path_hole_lo = h->lo;
        }
    }
    S[S_UNFILLED_HOLE_BYTES] = unfilled;
    /* data the peer acknowledged cumulatively (-1: no ACK of it seen) */
    S[S_ACKED_BYTES] = s->have_una ? s->snd_una - s->base : -1;
    int64_t reported = s->unseen_echo_reported;
    if (path_hole_lo >= 0 && reported > path_hole_lo) reported = path_hole_lo;
    if (reported > s->hi_end) reported = s->hi_end;
    if (reported > s->base && (!s->have_una || reported > s->snd_una)) {
        S[S_ACKED_BYTES] = reported - s->base;
        if (s->unseen_echo_reported_ns > S[S_LAST_ACKED_TS]) S[S_LAST_ACKED_TS] = s->unseen_echo_reported_ns;
    }
}

/* ---- the tail of a no-SACK connection that closed with a hole open ---- */

/* Half the 32-bit sequence space: an ACK this far or more from the first data's sequence number
 * is behind it (before the data), not ahead. */
#define TAIL_SEQ_HALF_SPACE ((int64_t)1 << 31)

/* A copy sent in the tail: the sequence numbers it held, [lo, hi) relative to the base; once the
 * spans are sorted by lo, hi becomes the furthest end of the spans up to this one. */
typedef struct tail_span {
    int64_t lo, hi;
} tail_span;

/* One direction's tail at the close, over the packets of the direction and its peer in file order
 * (all of them: fragments and ICMP-quoted copies too, as the packet table has them). */
typedef struct close_tail {
    int wanted;           /* a sender without SACK and without super-segments, with an MSS */
    int have_base;        /* base: the sequence number of its first data packet */
    int have_ack;         /* the peer sent an ACK (not a SYN) */
    int opened;           /* a data packet holds the final cumulative ACK's sequence number */
    uint32_t base;        /* its first data packet's sequence number */
    int64_t final;        /* the peer's highest cumulative ACK ahead of base, relative to it */
    int64_t opened_ns;    /* when the first copy of the segment at that ACK left */
    int64_t copies;       /* segments sent from then on */
    int64_t needed;       /* of those packets, the retransmissions labelled needed */
    int64_t n_spans;      /* those packets (data packets sent at or after opened_ns) */
    tail_span *spans;     /* their spans, n_spans of them once filled, sorted by lo */
    int64_t acked_before; /* the peer's highest cumulative ACK ahead of base so far, -1 before any */
    int64_t answered;     /* the peer's answers to tail copies later than a round trip after opened_ns */
} close_tail;

static int needed_kind(uint8_t kind) {
    return kind == TRUTH_KIND_RETRANS_FAST || kind == TRUTH_KIND_RETRANS_RTO || kind == TRUTH_KIND_RETRANS_TLP ||
           kind == TRUTH_KIND_RETRANS_OTHER;
}

/* Whether direction d gets a tail estimate at the close: a sender whose connection does not use
 * SACK (without it no ACK tells which segments above a hole arrived), that hands over no
 * super-segments (TSO/GSO: the hole's segment sits inside one sent before it, and the receiver
 * answers the bursts they leave in coalesced packets; three IPv4 TSO+GRO captures read 233 and
 * 266 lost of 369 and 473, 49 for 31). */
static int tail_wanted(const pass *ps, int64_t d) {
    const truth_input *in = ps->in;
    return in->mode[d] == TRUTH_MODE_SENDER && sack_off(in, d) && in->mss[d] > 0 &&
           stats_of(ps, d)[S_SUPER_SEGMENT_FRAMES] == 0;
}

/* Packet i's direction, or -1 where it has none in range. */
static int64_t tail_direction(const truth_input *in, int64_t i) {
    int32_t d = in->direction[i];
    return d >= 0 && d < in->n_directions ? d : -1;
}

/* The data packet i of a wanted direction: the first sets the base the ACKs are read against. */
static void tail_on_first_data(const truth_input *in, close_tail *t, int64_t i) {
    if (!t->wanted || t->have_base || in->payload_len[i] == 0) return;
    t->have_base = 1;
    t->base = in->seq[i];
}

/* An ACK (not a SYN) of the peer about t's data: the receiver's last word on what it holds may
 * come with its FIN or its RST. */
static void tail_on_peer_ack(const truth_input *in, close_tail *t, int64_t i) {
    if (!t->have_base || !(in->tcp_flags[i] & TRUTH_TCP_ACK) || (in->tcp_flags[i] & TRUTH_TCP_SYN)) return;
    t->have_ack = 1;
    int64_t rel = (int64_t)(uint32_t)(in->ack[i] - t->base);
    if (rel < TAIL_SEQ_HALF_SPACE && rel > t->final) t->final = rel;
}

/* A data packet of t's direction: the first (in file order) that holds the final ACK's sequence
 * number opened the tail (a connection whose data was all ACKed has none). */
static void tail_on_data_at_final(const truth_input *in, close_tail *t, int64_t i) {
    if (!t->have_ack || t->opened || in->payload_len[i] == 0) return;
    int64_t rel = (int64_t)(uint32_t)(in->seq[i] - t->base);
    if (rel <= t->final && t->final < rel + (int64_t)in->payload_len[i]) {
        t->opened = 1;
        t->opened_ns = in->ts_ns[i];
    }
}

/* Whether data packet i of t's direction was sent at or after the tail opened: a copy of the tail. */
static int tail_copy(const truth_input *in, const close_tail *t, int64_t i) {
    return t->opened && in->payload_len[i] > 0 && in->ts_ns[i] >= t->opened_ns;
}

/* A copy of t's tail: its segments, and whether the pass labelled it a needed retransmission
 * (each counts a loss already). */
static void tail_on_data_since(const truth_input *in, const truth_output *out, close_tail *t, int64_t i, int64_t mss) {
    if (!tail_copy(in, t, i)) return;
    t->copies += segments_of(in->payload_len[i], mss);
    if (needed_kind(out->kind[i])) t->needed++;
    t->n_spans++;
}

/* A copy of t's tail: the sequence numbers it held (t->spans has room for every copy). */
static void tail_on_span(const truth_input *in, close_tail *t, int64_t i, int64_t *filled) {
    if (!tail_copy(in, t, i) || *filled >= t->n_spans) return;
    int64_t lo = (int64_t)(uint32_t)(in->seq[i] - t->base);
    t->spans[(*filled)++] = (tail_span){lo, lo + (int64_t)in->payload_len[i]};
}

static int span_by_lo(const void *a, const void *b) {
    int64_t x = ((const tail_span *)a)->lo, y = ((const tail_span *)b)->lo;
    return (x > y) - (x < y);
}

/* Sorts t's spans by start and turns each end into the furthest end of the spans up to it, so
 * that tail_held reads with one binary search whether any copy reached past a sequence number. */
static void tail_spans_by_start(close_tail *t) {
    if (t->n_spans == 0) return;
    qsort(t->spans, (size_t)t->n_spans, sizeof(tail_span), span_by_lo);
    for (int64_t k = 1; k < t->n_spans; k++)
        if (t->spans[k].hi < t->spans[k - 1].hi) t->spans[k].hi = t->spans[k - 1].hi;
}

/* Whether a copy of t's tail held any of the sequence numbers an ACK moved past, (before,
 * acked]: a copy starting below acked and ending past before. */
static int tail_held(const close_tail *t, int64_t before, int64_t acked) {
    int64_t below = 0, above = t->n_spans; /* the spans starting below acked: [0, below) */
    while (below < above) {
        int64_t mid = below + (above - below) / 2;
        if (t->spans[mid].lo < acked)
            below = mid + 1;
        else
            above = mid;
    }
    return below > 0 && t->spans[below - 1].hi > before;
}

/* A packet of t's peer (not a SYN) later than the path's shortest round trip after the tail
 * opened is the receiver's answer to one copy of the tail where it is a RST without an ACK (a
 * closed socket answers each arrival so), a duplicate ACK (the receiver holds data above a hole
 * and ACKs each arrival at once, RFC 5681 4.2), or an ACK that moved past data a tail copy held
 * (that copy's repair arrived). An ACK that moved only past data no tail copy held answered the
 * arrival of older data: behind a queue such ACKs come after the tail's first copy left, and
 * counted as answers they hid its losses (nsb-v4-p1-cubic-q4, 4 ms of queue: 11 such ACKs and
 * the receiver's close, and 3 of the 24 copies lost read as none). Every ACK of the peer, early
 * or not, moves acked_before. */
static void tail_on_answer(const truth_input *in, close_tail *t, int64_t i, int64_t min_rtt_ns) {
    uint16_t flags = in->tcp_flags[i];
    if (!t->opened || (flags & TRUTH_TCP_SYN)) return;
    int answer;
    if (flags & TRUTH_TCP_ACK) {
        int64_t acked = (int64_t)(uint32_t)(in->ack[i] - t->base), before = t->acked_before;
        if (acked >= TAIL_SEQ_HALF_SPACE) return; /* behind the data: answers nothing */
        int moved = acked > before;
        if (moved) t->acked_before = acked;
        answer = !moved || tail_held(t, before, acked);
    } else {
        answer = (flags & TRUTH_TCP_RST) != 0;
    }
    if (answer && in->ts_ns[i] > t->opened_ns + (min_rtt_ns > 0 ? min_rtt_ns : 0)) t->answered++;
}

/* Room for the spans of every opened tail, in one block the first tail's spans point at; 0 where
 * it could not be had. */
static int tail_spans_alloc(close_tail *t, int64_t n_dirs) {
    int64_t total = 0;
    for (int64_t d = 0; d < n_dirs; d++) total += t[d].n_spans;
    tail_span *block = malloc((size_t)(total > 0 ? total : 1) * sizeof(tail_span));
    if (!block) return 0;
    for (int64_t d = 0, at = 0; d < n_dirs; at += t[d].n_spans, d++) t[d].spans = block + at;
    return 1;
}

/* The end of the pass, for each sender without SACK whose connection closed with a hole open
 * (tail_wanted): no repair or ACK tells the fate of the copies sent from the first copy of the
 * segment at the peer's final cumulative ACK on. Only the count of answers does: while the
 * receiver holds data above a hole it ACKs every arriving segment at once (RFC 5681 4.2), and
 * after it closed it answers each with a RST. S_TAIL_COPIES_AT_CLOSE: those copies, in segments;
 * S_TAIL_LOST_AT_CLOSE: copies less answers (tail_on_answer; 0 to copies), low where a queue
 * delays duplicate ACKs of earlier arrivals past the round trip (S_PATH_MIN_RTT_NS), high where
 * the receiver coalesced arrivals (GRO) or ACKs were lost; S_TAIL_NEEDED_SINCE_CLOSE: the
 * retransmissions sent since that the pass labelled needed. Six passes over the packets, only
 * where some direction wants one: the answers need every copy's span, later ones too. */
static void tails_at_close(pass *ps) {
    const truth_input *in = ps->in;
    int64_t n_dirs = in->n_directions, any = 0;
    for (int64_t d = 0; d < n_dirs; d++) any |= tail_wanted(ps, d);
    if (!any) return;
    close_tail *t = calloc((size_t)n_dirs, sizeof(close_tail));
    if (!t) {
        ps->out_of_memory = 1;
        return;
    }
    for (int64_t d = 0; d < n_dirs; d++) {
        t[d].wanted = tail_wanted(ps, d);
        t[d].acked_before = -1;
    }
    for (int64_t i = 0, d; i < in->n_packets; i++)
        if ((d = tail_direction(in, i)) >= 0) tail_on_first_data(in, &t[d], i);
    for (int64_t i = 0, d; i < in->n_packets; i++)
        if ((d = tail_direction(in, i)) >= 0) tail_on_peer_ack(in, &t[d ^ 1], i);
    for (int64_t i = 0, d; i < in->n_packets; i++)
        if ((d = tail_direction(in, i)) >= 0) tail_on_data_at_final(in, &t[d], i);
    for (int64_t i = 0, d; i < in->n_packets; i++)
        if ((d = tail_direction(in, i)) >= 0) tail_on_data_since(in, ps->out, &t[d], i, in->mss[d]);
    if (!tail_spans_alloc(t, n_dirs)) {
        ps->out_of_memory = 1;
        free(t);
        return;
    }
    int64_t *filled = calloc((size_t)n_dirs, sizeof(int64_t));
    if (!filled) {
        ps->out_of_memory = 1;
        free(t[0].spans);
        free(t);
        return;
    }
    for (int64_t i = 0, d; i < in->n_packets; i++)
        if ((d = tail_direction(in, i)) >= 0) tail_on_span(in, &t[d], i, &filled[d]);
    for (int64_t d = 0; d < n_dirs; d++) tail_spans_by_start(&t[d]);
    for (int64_t i = 0, d; i < in->n_packets; i++)
        if ((d = tail_direction(in, i)) >= 0) tail_on_answer(in, &t[d ^ 1], i, stats_of(ps, d ^ 1)[S_PATH_MIN_RTT_NS]);
    for (int64_t d = 0; d < n_dirs; d++) {
        if (!t[d].opened) continue;
        int64_t *S = stats_of(ps, d), lost = t[d].copies - t[d].answered;
        S[S_TAIL_COPIES_AT_CLOSE] = t[d].copies;
        S[S_TAIL_LOST_AT_CLOSE] = lost < 0 ? 0 : lost;
        S[S_TAIL_NEEDED_SINCE_CLOSE] = t[d].needed;
    }
    free(filled);
    free(t[0].spans);
    free(t);
}

int truth_analyze(const truth_input *in, truth_output *out) {
    int64_t n_dirs = in->n_directions;
    pass ps = {in, out, NULL, 0};
    if (n_dirs < 0 || n_dirs % 2 != 0) return -2;
    ps.dirs = calloc((size_t)(n_dirs > 0 ? n_dirs : 1), sizeof(direction_state));
    if (!ps.dirs) return -1;
    for (int64_t d = 0; d < n_dirs; d++) {
        int64_t *S = stats_of(&ps, d);
        memset(S, 0, sizeof(int64_t) * S_N_FIELDS);
        S[S_FIRST_DATA_TS] = S[S_LAST_DATA_TS] = S[S_SYN_TS] = S[S_SYNACK_TS] = S[S_FIRST_ACK_TS] = -1;
        S[S_FIRST_ACKED_TS] = S[S_LAST_ACKED_TS] = -1;
        S[S_TTL_MIN] = 256;
        S[S_TTL_MAX] = -1;
        ps.dirs[d].mss = in->mss[d];
        ps.dirs[d].min_rtt_ns = -1;
        ps.dirs[d].retx_fill_lo = -1;
        ps.dirs[d].repeat_at_una_ns = -1;
        ps.dirs[d].sweep_end = -1;
        ps.dirs[d].timer_sweep_budget = -1;
        ps.dirs[d].sender_rtt_min_ns = -1;
        ps.dirs[d].repair_lost_below = -1;
        ps.dirs[d].generation_due_ns = -1;
        ps.dirs[d].dupthresh_last_ns = -1;
        ps.dirs[d].repair_after_dupthresh_ns = -1;
        ps.dirs[d].timeout_resend_ns = ps.dirs[d].timeout_new_ns = -1;
        ps.dirs[d].timeout_resend_i = -1;
        ps.dirs[d].una_moved_ns = ps.dirs[d].late_fill_end = -1;
        ps.dirs[d].reported_hi = -1;
        ps.dirs[d].before_capture_hi = -1;
        ps.dirs[d].echoed_reported_hi = -1;
        ps.dirs[d].marked_hi = -1;
        ps.dirs[d].echoed_marked_hi = -1;
        ps.dirs[d].recovery_hi = -1;
        ps.dirs[d].unseen_echo_ns = -1;
        ps.dirs[d].repair_seen_ns = -1;
        ps.dirs[d].echo_flight_bytes = -1;
        ps.dirs[d].unseen_echo_reported = -1;
        ps.dirs[d].unseen_echo_reported_ns = -1;
    }
    for (int64_t i = 0; i < in->n_packets; i++) {
        out->kind[i] = TRUTH_KIND_NONE;
        out->rtt_us[i] = NAN;
        out->rtt_direction[i] = -1;
        out->in_flight[i] = -1;
        out->id64[i] = -1;
        out->hole_age_ns[i] = -1;
        if (out->lost_repairs) out->lost_repairs[i] = 0;
        int32_t d = in->direction[i];
        if (d < 0 || d >= n_dirs) continue;
        if (in->decode_flags[i] & (TRUTH_DECODE_IP_FRAGMENT | TRUTH_DECODE_IN_ICMP_ERROR)) continue;
        on_packet(&ps, d, i);
        on_ip_id(&ps, d, i);
        on_handshake(&ps, d, i);
        anchor_sequence(&ps, d, i);
        if (in->mode[d] == TRUTH_MODE_EVIDENCE) {
            on_evidence(&ps, d, i);
            continue;
        }
        on_ack(&ps, d, i);
        on_window(&ps, d, i);
        on_timestamp_echo(&ps, d, i);
        on_sent_tsval(&ps, d, i);
        on_data(&ps, d, i);
    }
    for (int64_t d = 0; d < n_dirs; d++) {
        if (in->mode[d] == TRUTH_MODE_SENDER && ps.dirs[d].ro) scoreboard_finish(&ps, d);
        capture_tail(&ps, d);
        free(ps.dirs[d].holes);
        free(ps.dirs[d].rtt);
        free(ps.dirs[d].sweep);
        free(ps.dirs[d].sb);
        if (ps.dirs[d].ro) free(ps.dirs[d].ro->awaiting);
        free(ps.dirs[d].ro);
        free(ps.dirs[d].data_tsvals_sent.at);
        free(ps.dirs[d].tsvals_sent.at);
    }
    tails_at_close(&ps);
    free(ps.dirs);
    return ps.out_of_memory ? -1 : 0;
}
