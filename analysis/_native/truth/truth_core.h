/*
 * truth_core.h -- truth-seeking TCP classification over a packet table, in pure C.
 *
 * The model. One pass over the packet table in file order keeps one state per
 * flow direction (a "direction" is stream * 2 + 0 or 1; its data is sent by one
 * endpoint, and the packets of the reverse direction carry the acknowledgments,
 * SACK blocks and timestamp echoes about it). Sequence numbers are unwrapped to
 * 64 bits against the highest value seen, so transfers over 4 GB keep counting.
 *
 * What the capture can see depends on where it was taken (the direction's mode):
 *  - at the sender (TRUTH_MODE_SENDER): every segment leaves in order; one that
 *    repeats sequence space already sent is a retransmission, spurious when the
 *    receiver had already ACKed or SACKed it, or later reports it with a D-SACK (one
 *    block may report several repeats the receiver coalesced, several blocks the
 *    segments of one repeat sent as a super-segment); without SACK (TRUTH_SACK_OFF) a repeat
 *    whose cumulative ACK echoes an older copy's TSval (Eifel), or that covers it together with
 *    the fill of the lowest hole (the window resent after a timeout), was not needed; where
 *    such an ACK shows the receiver held a segment from one of k copies without telling which,
 *    those copies count as lost at the rate the ACKs show the fills' repairs were lost, never
 *    all k (without timestamps: its first copy at the first copies' loss rate); with
 *    timestamps, a super-segment the sender sent is cut where a cumulative ACK or a repeat ends
 *    inside it, so that each repaired MSS is judged on its own; a first copy still unreported
 *    and never resent when the capture ends, that a RACK sender marks lost (sent before the
 *    latest-sent first copy the receiver reported by more than RACK's reordering window, or by
 *    any time with more than DupThresh - 1 segments reported above it on a path that never
 *    reordered), and that no estimate already weighs, was lost and the connection ended before
 *    its repair (S_LOST_UNREPAIRED); the first copies sent after the latest-sent one the receiver
 *    reported, sent once and never reported when the capture ends (the last flight:
 *    S_UNREPORTED_AT_END), with SACK, count as lost at the rate of the first copies sent just
 *    before them whose fate the ACKs told, twice their number, where the receiver still lacked
 *    data below data it had when its ACKs stopped and the flight left faster than the connection's
 *    data was delivered (S_UNREPORTED_LOST_MILLI, inside the estimate; its own standard deviation
 *    S_UNREPORTED_LOST_SD_MILLI, inside S_LOST_INFERRED_SD_MILLI, so that the rest's is known);
 *    the flight where those two conditions hold, whatever the estimate, is S_UNREPORTED_AT_RISK
 *    (a queue that overflows as the flight arrives, its rate just fallen, loses from it alone);
 *  - at the receiver (TRUTH_MODE_RECEIVER): segments lost upstream leave holes; a
 *    segment filling a hole is a retransmission unless the evidence says it is a
 *    late original (its IP ID below that of the segment that revealed the hole
 *    when the sender numbers packets one by one, else an older TSval, else arrival
 *    within a fraction of the RTT); data seen twice is a spurious retransmission, or the
 *    original of a hole a repair overtook when its TSval is older than the data that
 *    revealed the hole (the hole was no loss, and its count is taken back); a
 *    repair whose hole outlived new data the sender sent after hearing of it (the data's
 *    TSecr: an ACK sent well after the hole opened, or one that reported DupThresh segments
 *    above it, where the sender's habit and the repair's lateness agree, or one after which a
 *    sender that saw no reordering marks the hole lost, for a repair two round trips after a
 *    hole of one segment opened), or came below a
 *    higher hole's repair, or later than a first repair can come
 *    (a retransmission timeout: the minimum RTO, or three RTTs on slower paths), shows an
 *    earlier repair lost (S_LOST_REPAIRS), one per timeout it waited (without SACK the first
 *    timeout is the first repair, unless the hole's DupThresh duplicate ACKs came once the
 *    sender had left every recovery below it: then it was fast retransmitted), or per round trip in
 *    which data above the hole (new data, or a higher hole's repair) that the sender sent after
 *    hearing the hole still open arrived before the repair did, unless it left within a round
 *    trip of a first repair of lower data (the sender's sweep, by TSvals); the timeouts after the
 *    first count for the first segment the timer resent alone, and in a timeout's sweep the
 *    segments beyond what the sender could repair before it (as many as arrived while the
 *    holes were open) count no lost repair for lateness or overtaking; in-order data after a
 *    silence over the minimum RTO that followed a full segment, with a TSval that shows the
 *    sender waited that long, is the timeout's resend of a
 *    window lost whole (a retransmission filling a hole of its own), and in-order data right
 *    after that resend shows the loss probe sent before the timeout lost too (S_LOST_REPAIRS);
 *  - in between (TRUTH_MODE_IN_PATH): holes for loss upstream, and a repeat of data
 *    that passed here and was not yet ACKed was lost downstream, unless the copy that
 *    passed was one the receiver discarded by PAWS (its TSval older than the receiver's
 *    TS.Recent, as the capture follows it at the receiver and in path: S_PAWS_DISCARDS).
 * Retransmissions are sub-typed from the ACKs the capture saw: RTO (the lowest
 * unacked segment after ~the minimum RTO of silence, and the rest of that
 * recovery), TLP (the highest segment again without duplicate-ACK or SACK
 * evidence), fast (duplicate ACKs or SACK announced a hole), other.
 * Data the peer acknowledges that the capture never saw is a capture gap: the
 * capture dropped it, the network did not. So is a hole still open when the pass ends that
 * no captured ACK shows the receiver lacked once a repair was due, where the capture missed
 * the receiver's ACKs after it opened (new data echoes a TSval no captured packet of the peer
 * carried) or data kept arriving for twice the latest a repair can come: a path loss is
 * repaired and its repair arrives. Where the capture missed those ACKs, what they
 * acknowledged is estimated (S_ACKED_BYTES, S_LAST_ACKED_TS) from the echoes: the echoing
 * data's end less the bytes the sender had in flight past the newest captured ACK it echoed,
 * up to the first hole of a path loss, acknowledged about a round trip before that data.
 * A sender without SACK whose connection closed with a hole open (no super-segments sent) has a
 * tail whose fate no repair shows: the copies sent from the first copy of the segment at the
 * peer's final cumulative ACK on (S_TAIL_COPIES_AT_CLOSE), less the peer's answers to them later
 * than a round trip after it (one per arriving segment while the receiver holds data above a hole,
 * RFC 5681 4.2: RSTs without an ACK, duplicate ACKs, ACKs that moved past data a tail copy held;
 * not ACKs of older data only): S_TAIL_LOST_AT_CLOSE, an estimate; S_TAIL_NEEDED_SINCE_CLOSE the needed
 * retransmissions among those copies, which count a loss each already.
 * A silence with everything acknowledged after a direction's first message is the
 * application waiting before its transfer began: the time from the first data to the data
 * after that wait (S_IDLE_NS) is not the transfer's.
 *
 * No Python here: the same code runs under libFuzzer (fuzz/fuzz_truth.c). Every
 * array index is checked against the counts in truth_input; memory is allocated
 * per direction and freed before truth_analyze returns.
 */
#ifndef SPLINE_TRUTH_CORE_H
#define SPLINE_TRUTH_CORE_H

#include <stdint.h>

/* TCP header flags (the packet table's tcp_flags). */
#define TRUTH_TCP_FIN 0x001
#define TRUTH_TCP_SYN 0x002
#define TRUTH_TCP_RST 0x004
#define TRUTH_TCP_ACK 0x010

/* Packet-table decode_flags this pass reads (analysis/columns.py, decode.h). */
#define TRUTH_DECODE_TRUNCATED     0x01
#define TRUTH_DECODE_IP_FRAGMENT   0x02
#define TRUTH_DECODE_IN_ICMP_ERROR 0x04
#define TRUTH_DECODE_IP_ID_VALID   0x40

/* SACK blocks per packet in the packet table. */
#define TRUTH_MAX_SACK 4

/* Where the capture sat relative to a direction's data (truth.py MODE_*). */
enum truth_mode {
    TRUTH_MODE_EVIDENCE = -1, /* first pass: vantage evidence only (TTLs, handshake, IDs, jumps) */
    TRUTH_MODE_SENDER = 0,
    TRUTH_MODE_RECEIVER = 1,
    TRUTH_MODE_IN_PATH = 2,
};

/* Whether a connection uses SACK, from its handshake (truth.py SACK_*): both SYNs carried
 * SACK-permitted, one did not, or no handshake was captured. */
enum truth_sack {
    TRUTH_SACK_OFF = 0,
    TRUTH_SACK_ON = 1,
    TRUTH_SACK_UNKNOWN = 2,
};

/* What each data packet is (truth.py SEGMENT_KINDS). */
enum truth_kind {
    TRUTH_KIND_NONE = 0,
    TRUTH_KIND_ORIGINAL = 1,
    TRUTH_KIND_RETRANS_FAST = 2,
    TRUTH_KIND_RETRANS_RTO = 3,
    TRUTH_KIND_RETRANS_TLP = 4,
    TRUTH_KIND_RETRANS_OTHER = 5,
    TRUTH_KIND_SPURIOUS = 6,
    TRUTH_KIND_REORDERED = 7,
    TRUTH_KIND_WINDOW_PROBE = 8,
};

/* Per-direction statistics, int64 each, in this order (truth.py STAT_FIELDS). */
enum truth_stat {
    S_PACKETS,
    S_DATA_PACKETS,
    S_DATA_SEGMENTS,
    S_PAYLOAD_BYTES,
    S_UNIQUE_BYTES,
    S_RETRANS,
    S_RETRANS_FAST,
    S_RETRANS_RTO,
    S_RETRANS_TLP,
    S_RETRANS_OTHER,
    S_RETRANS_BYTES,
    S_SPURIOUS,
    S_REORDERED,
    S_HOLE_FILL_RETRANS,
    S_CAPTURE_GAPS,
    S_CAPTURE_GAP_BYTES,
    S_DUP_ACKS,
    S_SACK_BLOCKS,
    S_DSACK_BLOCKS,
    S_ZERO_WINDOW_EVENTS,
    S_WINDOW_PROBES,
    S_FIRST_DATA_TS,
    S_LAST_DATA_TS,
    S_FORWARD_JUMPS,
    S_SYN_TS,
    S_SYNACK_TS,
    S_FIRST_ACK_TS,
    S_TTL_MIN,
    S_TTL_MAX,
    S_ID_STEP1,
    S_ID_STEPS,
    S_UNFILLED_HOLE_BYTES,
    S_MAX_PAYLOAD,
    S_SUPER_SEGMENT_FRAMES,
    S_DOWNSTREAM_RETRANS,
    S_ID_FORWARD_STEPS,
    S_ID_ZERO,
    S_LOST_REPAIRS,
    S_ACKED_BYTES,
    S_SPURIOUS_WITHOUT_DSACK,
    S_DISCARD_DUPACKS,
    S_LOST_INFERRED_MILLI,
    S_LOST_INFERRED_SD_MILLI,
    S_IDLE_NS,
    S_FIRST_ACKED_TS,
    S_LAST_ACKED_TS,
    S_PAWS_DISCARDS,
    S_PATH_MIN_RTT_NS,
    S_LOST_UNREPAIRED,
    S_UNREPORTED_AT_END,
    S_UNREPORTED_LOST_MILLI,
    S_UNREPORTED_LOST_SD_MILLI,
    S_TAIL_COPIES_AT_CLOSE,
    S_TAIL_LOST_AT_CLOSE,
    S_TAIL_NEEDED_SINCE_CLOSE,
    S_UNREPORTED_AT_RISK,
    S_N_FIELDS
};

/* The packet table's columns this pass reads (n_packets rows each; the SACK columns
 * TRUTH_MAX_SACK per row), and per direction its mode, MSS (bytes), whether its
 * sender numbers IP IDs one by one and whether its connection uses SACK (enum truth_sack). n_directions is even;
 * direction[i] < 0 or >= n_directions: not TCP of a known stream, skipped. */
typedef struct truth_input {
    int64_t n_packets, n_directions;
    const int32_t *direction;
    const int64_t *ts_ns;
    const uint32_t *seq, *ack;
    const uint16_t *tcp_flags;
    const uint32_t *payload_len;
    const uint16_t *window;
    const uint32_t *ip_id;
    const uint8_t *decode_flags, *ttl, *has_ts;
    const uint32_t *tsval, *tsecr;
    const uint8_t *sack_count;
    const uint32_t *sack_left, *sack_right;
    const int8_t *mode;
    const int64_t *mss;
    const uint8_t *id_per_packet;
    const uint8_t *sack_negotiated;
} truth_input;

/* Caller-owned outputs: per packet (n_packets each) and per direction (stats:
 * n_directions * S_N_FIELDS, row-major). */
typedef struct truth_output {
    uint8_t *kind;          /* enum truth_kind */
    double *rtt_us;         /* RTT sample this packet gives, NaN none */
    int32_t *rtt_direction; /* direction the sample is about, -1 none */
    int64_t *in_flight;     /* bytes in flight after a data packet at the sender, -1 unknown */
    int64_t *id64;          /* IP ID unwrapped per direction, -1 unusable */
    int64_t *hole_age_ns;   /* a retransmission filling a hole: how long the hole was open, else -1 */
    int32_t *lost_repairs;  /* repairs lost before this packet that it shows (S_LOST_REPAIRS), or NULL */
    int64_t *stats;
} truth_output;

/* Runs the pass. Returns 0; -1 when memory ran out (outputs then incomplete); -2 when
 * n_directions is odd (direction d's peer is d ^ 1, so they come in pairs). */
int truth_analyze(const truth_input *in, truth_output *out);

#endif
