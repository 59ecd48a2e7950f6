/* seqanalysis.c -- Wireshark 4.0's TCP sequence analysis (tcp_analyze_sequence_numbers), one
 * pass in frame order, with tshark's default preferences (relative sequence numbers, bytes in
 * flight from the unacked list, fast retransmission taking precedence over out-of-order).
 *
 * State per direction ("flow") of a conversation: nextseq (highest seq+len seen, 0 = none yet)
 * and when it was set, maxseqtobeacked (highest contiguous), lastack and its time, the raw
 * window of the last frame, the duplicate-ACK counter, the flags of the previous frame, the
 * window scale, and the list of segments sent but not yet acknowledged (at most 10,000).
 * Per conversation: the time of the latest pure SYN and the first RTT (handshake), which sets
 * the out-of-order threshold. The checks and their order are those of packet-tcp.c; see
 * docs/metrics.md section 1 for the summary in words.
 *
 * Measured against tshark 4.0.17 where Wireshark's sources differ between releases: an ACK
 * beyond the other side's maxseqtobeacked is "ACKed unseen" once per gap (see the check);
 * spurious retransmission is checked
 * before fast retransmission and out-of-order; window full ignores the scale until the
 * receiver's first non-SYN ACK; a repeated SYN restores nextseq; a zero ack_rtt is not shown.
 *
 * The unacked list is kept sorted by (unwrapped) sequence number so that an ACK only visits
 * the segments it covers; the segments it does not cover would be left unchanged by
 * Wireshark's full walk, so the result is the same.
 */
#include <stdlib.h>
#include <string.h>

#include "tcp_native.h"

#define MAX_UNACKED_SEGMENTS          10000       /* Wireshark's TCP_MAX_UNACKED_SEGMENTS, segments */
#define FAST_RETRANSMISSION_WINDOW_NS 20000000LL  /* dup ACK -> fast retransmission, 20 ms */
#define DEFAULT_OUT_OF_ORDER_NS       3000000LL   /* out-of-order threshold without a handshake, 3 ms */
#define BYTES_IN_FLIGHT_LIMIT         2000000000u /* larger in-flight values are not shown, bytes */
#define MAX_STORED_SACK_BLOCKS        3           /* SACK blocks Wireshark keeps for bytes in flight */
#define WSCALE_MAX_SHIFT              14          /* RFC 7323 */
#define WSCALE_UNKNOWN                (-1)
#define WSCALE_NONE                   (-2)
#define HALF_SEQ_SPACE                2147483648LL /* 2^31 sequence numbers */
#define SEQ_SPACE                     4294967296LL /* 2^32 sequence numbers */
#define MPTCP_TOKEN_SUBTYPES          0x3          /* MP_CAPABLE (0) and MP_JOIN (1) carry keys/tokens */

typedef struct {
    uint32_t seq;     /* first unacked sequence number (moves up on a partial ACK) */
    uint32_t nextseq; /* seq + len (+1 for SYN/FIN) */
    int64_t key;      /* unwrapped seq: the sort key */
    int64_t frame;
    int64_t ts_ns;
} unacked_t;

typedef struct {
    uint32_t nextseq;
    int64_t nextseq_ns;
    uint32_t maxseqtobeacked;
    uint32_t lastack;
    int64_t lastack_ns;
    uint32_t window; /* raw window field of the last frame; UINT32_MAX before any */
    int win_scale;
    int is_first_ack;
    int dupacknum;
    uint32_t lastsegmentflags;
    uint32_t base_seq;
    int base_set;
    int valid_bif;
    int num_sack;
    uint32_t sack_left[MAX_STORED_SACK_BLOCKS], sack_right[MAX_STORED_SACK_BLOCKS];
    /* unacked segments: sorted by key in segs[head..tail) */
    unacked_t *segs;
    size_t head, tail, cap;
    int64_t max_next_key; /* unwrapped max nextseq over the list */
    int64_t seq_ref;      /* unwrap reference of this direction's sequence space */
    int seq_ref_set;
    uint16_t mp_operations; /* the conversation's MPTCP operations when this side last sent */
} flow_t;

typedef struct {
    flow_t flow[2];
    int64_t ts_mru_syn_ns;   /* 0 = none */
    int64_t ts_first_rtt_ns; /* 0 = unknown */
    int has_mptcp;           /* an MPTCP option was seen */
    uint16_t mp_operations;  /* MPTCP option subtypes seen so far, bit 1 << subtype */
    int mptcp_tokenless;     /* the first MPTCP option was neither MP_CAPABLE nor MP_JOIN */
} conv_t;

static void flow_init(flow_t *f) {
    memset(f, 0, sizeof(*f));
    f->window = UINT32_MAX;
    f->win_scale = WSCALE_UNKNOWN;
    f->valid_bif = 1;
}

static int64_t unwrap_seq(flow_t *f, uint32_t raw) {
    if (!f->seq_ref_set) {
        f->seq_ref_set = 1;
        f->seq_ref = raw;
        return raw;
    }
    int64_t v = f->seq_ref + (int32_t)(raw - (uint32_t)f->seq_ref);
    if (v < 0) v += SEQ_SPACE;
    if (v > f->seq_ref) f->seq_ref = v;
    return v;
}

static size_t list_len(const flow_t *f) { return f->tail - f->head; }

/* Inserts a segment keeping the list sorted by key (stable: equal keys stay in frame order). */
static int list_insert(flow_t *f, const unacked_t *u) {
    if (f->tail == f->cap) {
        size_t n = list_len(f);
        if (f->head > 0 && n < f->cap / 2) {
            memmove(f->segs, f->segs + f->head, n * sizeof(unacked_t));
        } else {
            size_t cap = f->cap ? f->cap * 2 : 16;
            unacked_t *p = malloc(cap * sizeof(unacked_t));
            if (!p) return -1;
            if (n) memcpy(p, f->segs + f->head, n * sizeof(unacked_t));
            free(f->segs);
            f->segs = p;
            f->cap = cap;
        }
        f->head = 0;
        f->tail = n;
    }
    size_t pos = f->tail;
    while (pos > f->head && f->segs[pos - 1].key > u->key) pos--;
    if (pos < f->tail) memmove(f->segs + pos + 1, f->segs + pos, (f->tail - pos) * sizeof(unacked_t));
    f->segs[pos] = *u;
    f->tail++;
    int64_t next_key = u->key + (int64_t)(uint32_t)(u->nextseq - u->seq);
    if (list_len(f) == 1 || next_key > f->max_next_key) f->max_next_key = next_key;
    return 0;
}

static int cmp_key(const void *a, const void *b) {
    const unacked_t *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->frame < y->frame ? -1 : x->frame > y->frame;
}

/* Wireshark's fate of one unacked segment under an ACK number: 0 keep, 1 trimmed, 2 delete
 * (exact match: *exact set), 3 delete (older than the ACK). */
static int ack_fate(unacked_t *u, uint32_t ack, int *exact) {
    *exact = 0;
    if (ack == u->nextseq) {
        *exact = 1;
        return 2;
    }
    if (SEQ_GT(ack, u->seq) && SEQ_LE(ack, u->nextseq)) {
        u->key += (int64_t)(uint32_t)(ack - u->seq);
        u->seq = ack;
        return 1;
    }
    if (SEQ_GT(u->nextseq, ack)) return 0;
    return 3;
}

/* Removes what `ack` acknowledges from the list; reports the oldest exactly-acked segment. */
static void list_ack(flow_t *f, uint32_t ack, int64_t *acked_frame, int64_t *acked_ts) {
    size_t n = list_len(f);
    *acked_frame = -1;
    if (n == 0) return;
    unacked_t *first = &f->segs[f->head];
    int64_t span = f->segs[f->tail - 1].key - first->key;
    uint32_t u = ack - first->seq;
    size_t end; /* segments [head, end) may be affected */
    int full = 0;
    if (span >= HALF_SEQ_SPACE) {
        full = 1;
    } else if (u >= 1 && u < (uint32_t)HALF_SEQ_SPACE) {
        end = f->head;
        while (end < f->tail && SEQ_GT(ack, f->segs[end].seq)) end++;
    } else if (u >= (uint32_t)HALF_SEQ_SPACE && (int64_t)u - span < HALF_SEQ_SPACE) {
        full = 1;
    } else {
        return; /* the ACK is at or below every segment: nothing changes */
    }
    if (full) end = f->tail;

    /* Process [head, end): kept segments are packed towards `end`, preserving order. */
    size_t write = end;
    for (size_t r = end; r > f->head; r--) {
        unacked_t seg = f->segs[r - 1];
        int exact;
        int fate = ack_fate(&seg, ack, &exact);
        if (exact && (*acked_frame < 0 || seg.frame < *acked_frame)) {
            *acked_frame = seg.frame;
            *acked_ts = seg.ts_ns;
        }
        if (fate <= 1) f->segs[--write] = seg;
    }
    f->head = write;
    if (list_len(f) == 0) {
        f->head = f->tail = 0;
        return;
    }
    if (full) {
        qsort(f->segs + f->head, list_len(f), sizeof(unacked_t), cmp_key);
        f->max_next_key = INT64_MIN;
        for (size_t k = f->head; k < f->tail; k++) {
            int64_t nk = f->segs[k].key + (int64_t)(uint32_t)(f->segs[k].nextseq - f->segs[k].seq);
            if (nk > f->max_next_key) f->max_next_key = nk;
        }
    }
    /* Otherwise the maximum end is unchanged: every deleted segment ended at or below the
     * ACK, every remaining one ends above it. */
}

/* Bytes in flight as Wireshark computes them: max end - min start of the unacked list,
 * relative to the base sequence, in 32-bit arithmetic. */
static uint32_t list_span_bytes(const flow_t *f) {
    const unacked_t *first = &f->segs[f->head];
    uint32_t first_rel = first->seq - f->base_seq;
    int64_t extent = f->max_next_key - first->key;
    if ((int64_t)first_rel + extent < SEQ_SPACE)
        return (uint32_t)extent; /* no wrap of the relative numbers inside the list */
    uint32_t lo = UINT32_MAX, hi = 0;
    for (size_t k = f->head; k < f->tail; k++) {
        uint32_t s = f->segs[k].seq - f->base_seq, e = f->segs[k].nextseq - f->base_seq;
        if (s < lo) lo = s;
        if (e > hi) hi = e;
    }
    return hi - lo;
}

/* Wireshark's nstime arithmetic compared as unsigned: a negative delta is never "recent". */
static int recent(int64_t now_ns, int64_t then_ns, uint64_t threshold_ns) {
    return (uint64_t)(now_ns - then_ns) < threshold_ns;
}

static void analyze_frame(const tcp_packets_t *pk, size_t i, conv_t *cv, int dir, uint32_t *ta, tcp_analysis_out_t *out,
                          int *oom) {
    flow_t *fwd = &cv->flow[dir], *rev = &cv->flow[!dir];
    uint32_t seq = pk->seq[i], ack = pk->ack[i];
    uint32_t seglen = pk->tcp_payload_len[i];
    uint16_t flags = pk->tcp_flags[i];
    uint32_t window = pk->window[i];
    int64_t now = pk->ts_ns[i];
    int sfr = (flags & (TH_SYN | TH_FIN | TH_RST)) != 0;

    if (!fwd->base_set) {
        fwd->base_seq = (flags & TH_SYN) ? seq : seq - 1;
        fwd->base_set = 1;
    }
    if (!rev->base_set && (flags & TH_ACK)) {
        rev->base_seq = ack - 1;
        rev->base_set = 1;
    }
    if (flags & TH_ACK) rev->valid_bif = 1;

    if (seglen == 1 && seq == fwd->nextseq && rev->window == 0) {
        *ta |= WS_ZERO_WINDOW_PROBE;
        goto finished_fwd;
    }
    if (window == 0 && !sfr) *ta |= WS_ZERO_WINDOW;
    if (fwd->nextseq && SEQ_GT(seq, fwd->nextseq) && !(flags & TH_RST)) {
        *ta |= WS_LOST_SEGMENT;
        fwd->valid_bif = 0;
    }
    if ((seglen == 0 || seglen == 1) && seq == fwd->nextseq - 1 && !sfr) *ta |= WS_KEEP_ALIVE;
    if (seglen == 0 && window && window != fwd->window && seq == fwd->nextseq && ack == fwd->lastack && !sfr)
        *ta |= WS_WINDOW_UPDATE;
    if (seglen > 0 && rev->win_scale != WSCALE_UNKNOWN && !sfr) {
        int shift = (rev->is_first_ack || rev->win_scale == WSCALE_NONE) ? 0 : rev->win_scale;
        if (seq + seglen == rev->lastack + (rev->window << shift)) *ta |= WS_WINDOW_FULL;
    }
    if (seglen == 0 && window && window == fwd->window && seq == fwd->nextseq && ack == fwd->lastack &&
        (rev->lastsegmentflags & WS_KEEP_ALIVE) && !sfr) {
        *ta |= WS_KEEP_ALIVE_ACK;
        goto finished_fwd;
    }
    if (seglen == 0 && window == 0 && window == fwd->window && seq == fwd->nextseq && ack == fwd->lastack &&
        (rev->lastsegmentflags & WS_ZERO_WINDOW_PROBE) && !sfr) {
        *ta |= WS_ZERO_WINDOW_PROBE_ACK;
        goto finished_fwd;
    }
    if (seglen == 0 && window && window == fwd->window && seq == fwd->nextseq && ack == fwd->lastack && !sfr &&
        !(cv->has_mptcp && cv->mp_operations != fwd->mp_operations)) {
        /* MPTCP: the first duplicate-ACK candidate of a side after a new kind of MPTCP
         * option appeared in the connection is not one (RFC 8684 allows such repeats). */
        fwd->dupacknum = fwd->dupacknum == -1 ? 1 : fwd->dupacknum + 1;
        *ta |= WS_DUPLICATE_ACK;
        out->dupack_num[i] = fwd->dupacknum;
    }

finished_fwd:
    if (ack != fwd->lastack) fwd->dupacknum = 0;

    if (rev->maxseqtobeacked && SEQ_GT(ack, rev->maxseqtobeacked) && (flags & TH_ACK)) {
        /* Reported once per gap. When the other side's contiguous edge is below its nextseq
         * (a hole it left, "previous segment not captured") the edge jumps to nextseq.
         * Otherwise the other side's duplicate-ACK counter is the memory: reported only
         * while it is 0, then set to -1 until that side's ACK number moves (a duplicate ACK
         * from it counts on from -1 to 1), so a stream of ACKs beyond one unseen segment,
         * or beyond an idle side that only repeats its ACK, is reported once. */
        if (SEQ_LT(rev->maxseqtobeacked, rev->nextseq)) {
            rev->maxseqtobeacked = rev->nextseq;
            *ta |= WS_ACK_LOST_SEGMENT;
        } else {
            if (rev->dupacknum == 0) *ta |= WS_ACK_LOST_SEGMENT;
            rev->dupacknum = -1;
        }
    }

    if (seglen > 0 || (flags & (TH_SYN | TH_FIN))) {
        int not_advanced = fwd->nextseq && SEQ_LT(seq, fwd->nextseq);
        if (*ta & WS_KEEP_ALIVE) goto finished_retransmission;
        if (seglen > 1 && fwd->nextseq - 1 == seq) not_advanced = 0;
        if (seglen > 0 && rev->lastack && SEQ_LE(seq + seglen, rev->lastack)) {
            *ta |= WS_SPURIOUS_RETRANSMISSION;
            goto finished_retransmission;
        }
        /* tshark's counter is unsigned: the -1 left by "ACKed unseen" counts as >= 2 */
        if (not_advanced && (uint32_t)rev->dupacknum >= 2 && rev->lastack == seq &&
            recent(now, rev->lastack_ns, FAST_RETRANSMISSION_WINDOW_NS)) {
            *ta |= WS_FAST_RETRANSMISSION;
            goto finished_retransmission;
        }
        uint64_t ooo_threshold_ns =
            cv->ts_first_rtt_ns == 0 ? (uint64_t)DEFAULT_OUT_OF_ORDER_NS : (uint64_t)cv->ts_first_rtt_ns;
        if (not_advanced && recent(now, fwd->nextseq_ns, ooo_threshold_ns) &&
            fwd->nextseq != seq + seglen + ((flags & (TH_SYN | TH_FIN)) ? 1 : 0)) {
            *ta |= WS_OUT_OF_ORDER;
            goto finished_retransmission;
        }
        if (not_advanced) *ta |= WS_RETRANSMISSION;
    }

finished_retransmission:;
    uint32_t nextseq = seq + seglen;
    if ((seglen || (flags & (TH_SYN | TH_FIN))) && list_len(fwd) < MAX_UNACKED_SEGMENTS) {
        if (flags & (TH_SYN | TH_FIN)) nextseq += 1;
        unacked_t u = {seq, nextseq, unwrap_seq(fwd, seq), (int64_t)i, now};
        if (list_insert(fwd, &u) < 0) {
            *oom = 1;
            return;
        }
    }
    if (SEQ_GT(nextseq, fwd->nextseq) || !fwd->nextseq) {
        if (!(*ta & WS_ZERO_WINDOW_PROBE)) {
            fwd->nextseq = nextseq;
            fwd->nextseq_ns = now;
        }
    }
    if (seq == fwd->maxseqtobeacked || !fwd->maxseqtobeacked) {
        if (!(*ta & WS_ZERO_WINDOW_PROBE)) fwd->maxseqtobeacked = fwd->nextseq;
    }
    fwd->window = window;
    fwd->lastack = ack;
    fwd->lastack_ns = now;
    if (cv->has_mptcp) fwd->mp_operations = cv->mp_operations;
    fwd->lastsegmentflags = *ta;

    int64_t acked_frame, acked_ts = 0;
    list_ack(rev, ack, &acked_frame, &acked_ts);
    if (acked_frame >= 0) {
        out->acked_frame[i] = acked_frame;
        /* tshark shows no ack_rtt when it is exactly zero */
        if (now != acked_ts) out->ack_rtt_ns[i] = now - acked_ts;
    }

    if (seglen != 0 && list_len(fwd) > 0 && fwd->valid_bif) {
        uint32_t in_flight = list_span_bytes(fwd);
        for (int k = 0; k < rev->num_sack; k++) in_flight -= rev->sack_right[k] - rev->sack_left[k];
        if (in_flight > 0 && in_flight < BYTES_IN_FLIGHT_LIMIT)
            out->bytes_in_flight[i] = (int64_t)in_flight - ((flags & (TH_SYN | TH_FIN)) ? 1 : 0);
    }
}

int tcp_wireshark_analyze(const tcp_packets_t *pk, const int32_t *conversation, const uint8_t *direction,
                          size_t n_conversations, tcp_analysis_out_t *out) {
    conv_t *convs = malloc((n_conversations ? n_conversations : 1) * sizeof(conv_t));
    if (!convs) return -1;
    for (size_t c = 0; c < n_conversations; c++) {
        flow_init(&convs[c].flow[0]);
        flow_init(&convs[c].flow[1]);
        convs[c].ts_mru_syn_ns = 0;
        convs[c].ts_first_rtt_ns = 0;
        convs[c].has_mptcp = 0;
        convs[c].mp_operations = 0;
        convs[c].mptcp_tokenless = 0;
    }
    int oom = 0;
    for (size_t i = 0; i < pk->n_frames && !oom; i++) {
        out->flags[i] = 0;
        out->ack_rtt_ns[i] = -1;
        out->acked_frame[i] = -1;
        out->bytes_in_flight[i] = -1;
        out->dupack_num[i] = 0;
        int32_t c = conversation[i];
        if (c < 0) continue;
        conv_t *cv = &convs[c];
        int dir = direction[i];
        flow_t *fwd = &cv->flow[dir], *rev = &cv->flow[!dir];
        uint16_t flags = pk->tcp_flags[i];
        uint32_t seq = pk->seq[i];
        int64_t now = pk->ts_ns[i];
        uint32_t ta = 0;

        /* Conversation-level checks made before the analysis (dissect_tcp). A pure SYN with a
         * new ISN already got a new conversation from the streams pass. */
        if ((flags & (TH_SYN | TH_ACK)) == TH_SYN && fwd->base_set && seq == fwd->base_seq) {
            fwd->nextseq = fwd->maxseqtobeacked; /* retransmitted SYN: undo a RST's seq */
        }
        if ((flags & (TH_SYN | TH_ACK)) == (TH_SYN | TH_ACK) && fwd->base_set && seq != fwd->base_seq) {
            fwd->base_seq = seq;
            ta |= WS_REUSED_PORTS;
        }
        fwd->num_sack = 0;

        int analysed = !(pk->decode_flags[i] & (DECODE_IN_ICMP_ERROR | DECODE_IP_FRAGMENT));
        if (analysed) analyze_frame(pk, i, cv, dir, &ta, out, &oom);

        /* After the analysis: handshake bookkeeping, then the options. */
        if (flags & TH_SYN) {
            if (!(flags & TH_ACK)) cv->ts_mru_syn_ns = now;
            fwd->is_first_ack = 1;
        }
        if ((flags & (TH_SYN | TH_ACK)) == TH_ACK) {
            if (cv->ts_mru_syn_ns != 0 && cv->ts_first_rtt_ns == 0) cv->ts_first_rtt_ns = now - cv->ts_mru_syn_ns;
            fwd->is_first_ack = 0;
        }
        if (pk->opt_wscale[i] >= 0)
            fwd->win_scale = pk->opt_wscale[i] > WSCALE_MAX_SHIFT ? WSCALE_MAX_SHIFT : pk->opt_wscale[i];
        int n_sack = pk->sack_count[i];
        for (int k = 0; k < n_sack && k < MAX_STORED_SACK_BLOCKS; k++) {
            fwd->sack_left[k] = pk->sack_left[4 * i + k];
            fwd->sack_right[k] = pk->sack_right[4 * i + k];
            fwd->num_sack = k + 1;
        }
        /* tshark's option dissection throws (so the frame shows no analysis and what follows
         * the options is skipped) when the snaplen cut the header, and when an MP_CAPABLE or
         * MP_JOIN comes after the connection's MPTCP state was made without a token. */
        if (pk->opt_mptcp[i] && !cv->has_mptcp &&
            !((pk->decode_flags[i] & DECODE_TRUNCATED) && pk->tcp_header_len[i] > 0))
            cv->mptcp_tokenless = !(pk->opt_mptcp[i] & MPTCP_TOKEN_SUBTYPES);
        int mptcp_throws = (pk->opt_mptcp[i] & MPTCP_TOKEN_SUBTYPES) && cv->has_mptcp && cv->mptcp_tokenless;
        int snaplen_cut = (pk->decode_flags[i] & DECODE_TRUNCATED) && pk->tcp_header_len[i] > 0;
        int header_cut = snaplen_cut || mptcp_throws;
        /* tshark takes up the MPTCP options once all options are read: not when they throw */
        if (pk->opt_mptcp[i] && !header_cut) {
            cv->has_mptcp = 1;
            cv->mp_operations |= pk->opt_mptcp[i];
        }
        if ((flags & TH_SYN) && !header_cut) { /* after the options: not reached when they throw */
            if (fwd->win_scale == WSCALE_UNKNOWN) {
                fwd->win_scale = WSCALE_NONE;
                rev->win_scale = WSCALE_NONE;
            } else if ((flags & TH_ACK) && rev->win_scale == WSCALE_NONE) {
                fwd->win_scale = WSCALE_NONE;
            }
        }
        /* A TCP header cut short by the snaplen: tshark's option dissection throws after the
         * analysis has updated its state, so the frame shows no analysis at all. */
        if (header_cut) {
            ta = 0;
            out->ack_rtt_ns[i] = -1;
            out->acked_frame[i] = -1;
            out->bytes_in_flight[i] = -1;
            out->dupack_num[i] = 0;
        }
        out->flags[i] = ta;
    }
    for (size_t c = 0; c < n_conversations; c++) {
        free(convs[c].flow[0].segs);
        free(convs[c].flow[1].segs);
    }
    free(convs);
    return oom ? -1 : 0;
}
