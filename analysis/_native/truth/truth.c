/*
 * Truth-seeking TCP classification: one pass over the packet table in file
 * order, one state per flow direction ("slot" = stream * 2 + direction).
 *
 * Model. Each slot is a byte stream sent by one endpoint. Its sequence
 * numbers are unwrapped to 64 bits against the highest value seen, so flows
 * over 4 GB keep counting. The packets of the reverse slot carry the
 * acknowledgments, SACK blocks and timestamps echoes about this slot.
 *
 * What the capture can see depends on where it was taken ("mode"):
 *  - sender-style (mode 0): every segment leaves in order; a segment that
 *    repeats sequence space already sent is a retransmission. It is spurious
 *    when the receiver had already ACKed or SACKed it when it left, or later
 *    reports it as duplicate with a D-SACK.
 *  - receiver-style (mode 1): segments lost upstream leave holes. A segment
 *    filling a hole is a retransmission unless the evidence says it is a late
 *    original (its IP ID below the ID of the segment that revealed the hole
 *    when the sender numbers packets one by one, else its TSval older than
 *    that segment's, else arrival within a fraction of the RTT). A segment
 *    repeating data already seen is a spurious retransmission.
 * Retransmissions are sub-typed from the ACK stream the capture saw: RTO
 * (the lowest unacked segment again after at least ~the minimum RTO of
 * silence, and everything retransmitted until that recovery ends), TLP (the
 * highest segment again with no duplicate ACK or SACK evidence), fast
 * (duplicate ACKs or SACK blocks announced a hole, and the rest of that
 * recovery), other.
 *
 * Data that the peer acknowledges but the capture never saw (a hole passed
 * by the cumulative ACK) is a capture gap: the capture dropped it, the
 * network did not.
 *
 * Only the CPython C API is used: inputs arrive through the buffer protocol,
 * outputs leave as bytearrays that Python wraps with numpy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TCP_FIN 0x001
#define TCP_SYN 0x002
#define TCP_RST 0x004
#define TCP_ACK 0x010

#define DECODE_IP_FRAGMENT 0x02
#define DECODE_IN_ICMP_ERROR 0x04
#define DECODE_IP_ID_VALID 0x40

#define MAX_SACK 4
/* Modes of a slot (truth.py MODE_*): where the capture sat relative to the data. */
#define MODE_EVIDENCE (-1)  /* first pass: gather vantage evidence only */
#define MODE_SENDER 0       /* next to the sender: repeats are retransmissions */
#define MODE_RECEIVER 1     /* at the receiver: loss upstream leaves holes */
#define MODE_IN_PATH 2      /* between them: holes for loss upstream, repeats of data that
                             * passed (and was not yet ACKed) for loss downstream */

/* Linux's minimum retransmission timeout is 200 ms; accept 10% early. */
#define RTO_MIN_NS 180000000LL
/* Without an RTT estimate, a hole filled within this time is reordering. */
#define REORDER_DEFAULT_NS 3000000LL
/* A hole filled within this fraction of the RTT is reordering (1/REORDER_RTT_DIV). */
#define REORDER_RTT_DIV 2
/* Segments awaiting their RTT sample, and retransmissions kept for D-SACK
 * matching, per slot (ring buffers, entries). */
#define RTT_RING 4096
#define RETX_RING 512
/* Holes tracked per slot at once (entries); older ones are forgotten. */
#define MAX_HOLES 8192

/* Per-packet segment kinds (mirrored in truth.py). */
enum {
    KIND_NONE = 0, KIND_ORIGINAL = 1, KIND_RETRANS_FAST = 2, KIND_RETRANS_RTO = 3,
    KIND_RETRANS_TLP = 4, KIND_RETRANS_OTHER = 5, KIND_SPURIOUS = 6, KIND_REORDERED = 7,
    KIND_WINDOW_PROBE = 8
};

/* Per-slot statistics (int64 each, mirrored in truth.py STAT_FIELDS). */
enum {
    S_PACKETS, S_DATA_PACKETS, S_DATA_SEGMENTS, S_PAYLOAD_BYTES, S_UNIQUE_BYTES,
    S_RETRANS, S_RETRANS_FAST, S_RETRANS_RTO, S_RETRANS_TLP, S_RETRANS_OTHER,
    S_RETRANS_BYTES, S_SPURIOUS, S_REORDERED, S_HOLE_FILL_RETRANS, S_CAPTURE_GAPS,
    S_CAPTURE_GAP_BYTES, S_DUP_ACKS, S_SACK_BLOCKS, S_DSACK_BLOCKS, S_ZERO_WINDOW_EVENTS,
    S_WINDOW_PROBES, S_FIRST_DATA_TS, S_LAST_DATA_TS, S_FORWARD_JUMPS, S_SYN_TS,
    S_SYNACK_TS, S_FIRST_ACK_TS, S_TTL_MIN, S_TTL_MAX, S_ID_STEP1, S_ID_STEPS,
    S_UNFILLED_HOLE_BYTES, S_MAX_PAYLOAD, S_SUPER_SEGMENT_FRAMES, S_DOWNSTREAM_RETRANS,
    S_ID_FORWARD_STEPS, S_ID_ZERO, S_N_FIELDS
};

typedef struct { int64_t lo, hi, created_ns, reveal_id; uint32_t reveal_tsval; int has_ts; } Hole;
typedef struct { int64_t end, ts_ns; } RttEntry;
typedef struct { int64_t lo, hi, pkt; int spurious, downstream; } RetxEntry;

typedef struct {
    int have_ref;          /* sequence space anchored */
    int64_t base;          /* first data sequence number (unwrapped) */
    int64_t hi_end;        /* highest sequence end sent/seen (data only) */
    int64_t last_data_ns, last_tx_ns;
    /* what the peer's ACKs said about this slot's data */
    int have_una;
    int64_t snd_una, last_adv_ns;
    int64_t dupacks;       /* duplicate ACKs since the cumulative ACK last advanced */
    int sack_evidence;     /* SACK blocks seen since the last advance */
    int nsack;
    int64_t sack_lo[MAX_SACK], sack_hi[MAX_SACK];
    uint32_t peer_window;  /* raw window of the peer's latest packet */
    int peer_window_known;
    /* recovery episodes */
    int recovery_kind;     /* 0 none, KIND_RETRANS_FAST or KIND_RETRANS_RTO */
    int64_t recovery_point;
    int64_t karn_hi;       /* ACKs up to here cover retransmitted data: no RTT sample */
    /* holes (receiver-style) */
    Hole *holes; int nholes, cap_holes;
    /* RTT */
    RttEntry *rtt; int rtt_head, rtt_len;
    RetxEntry retx[RETX_RING]; int retx_head, retx_len;
    int64_t min_rtt_ns;
    /* TSval -> first time sent, for the peer's echo (ring of distinct TSvals) */
    uint32_t tsv[64]; int64_t tsv_ns[64]; int tsv_head, tsv_len;
    uint32_t tsv_last; int tsv_last_valid;  /* newest TSval recorded (recorded once) */
    /* IP ID unwrapping */
    int have_id; int64_t id_hi; int64_t last_id;
    int64_t mss;
} Slot;

typedef struct { Py_buffer b; int ok; } Buf;

static int get_buf(PyObject *o, Buf *out, Py_ssize_t itemsize, Py_ssize_t n, const char *name) {
    out->ok = 0;
    if (PyObject_GetBuffer(o, &out->b, PyBUF_C_CONTIGUOUS) < 0) return -1;
    out->ok = 1;
    if (out->b.len != itemsize * n) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd bytes, got %zd", name, itemsize * n, out->b.len);
        return -1;
    }
    return 0;
}

static inline int64_t unwrap32(int64_t ref, uint32_t raw) {
    return ref + (int32_t)(raw - (uint32_t)ref);
}

static int64_t segments_of(int64_t len, int64_t mss) {
    if (len <= 0) return 0;
    if (mss <= 0) return 1;
    return (len + mss - 1) / mss;
}

/* Remove [lo, hi) from the hole list; returns bytes removed, and the first
 * overlapping hole's copy in *first (when any). */
static int64_t holes_cut(Slot *s, int64_t lo, int64_t hi, Hole *first, int *found) {
    int64_t removed = 0;
    *found = 0;
    for (int i = 0; i < s->nholes; i++) {
        Hole *h = &s->holes[i];
        if (h->hi <= lo) continue;
        if (h->lo >= hi) break;
        if (!*found) { *first = *h; *found = 1; }
        int64_t olo = h->lo > lo ? h->lo : lo, ohi = h->hi < hi ? h->hi : hi;
        removed += ohi - olo;
        if (olo == h->lo && ohi == h->hi) {               /* whole hole */
            memmove(h, h + 1, sizeof(Hole) * (size_t)(s->nholes - i - 1));
            s->nholes--; i--;
        } else if (olo == h->lo) {
            h->lo = ohi;
        } else if (ohi == h->hi) {
            h->hi = olo;
        } else {                                          /* split in two */
            if (s->nholes == s->cap_holes) {
                int nc = s->cap_holes ? s->cap_holes * 2 : 16;
                Hole *nh = realloc(s->holes, sizeof(Hole) * (size_t)nc);
                if (!nh) return removed;
                s->holes = nh; s->cap_holes = nc; h = &s->holes[i];
            }
            memmove(h + 1, h, sizeof(Hole) * (size_t)(s->nholes - i));
            s->nholes++;
            s->holes[i].hi = olo;
            s->holes[i + 1].lo = ohi;
            i++;
        }
    }
    return removed;
}

static void holes_append(Slot *s, Hole h) {
    if (s->nholes == MAX_HOLES) {  /* forget the oldest */
        memmove(s->holes, s->holes + 1, sizeof(Hole) * (MAX_HOLES - 1));
        s->nholes--;
    }
    if (s->nholes == s->cap_holes) {
        int nc = s->cap_holes ? s->cap_holes * 2 : 16;
        Hole *nh = realloc(s->holes, sizeof(Hole) * (size_t)nc);
        if (!nh) return;
        s->holes = nh; s->cap_holes = nc;
    }
    s->holes[s->nholes++] = h;
}

/* A payload-less segment whose IP ID is this far (IDs) from the counter's highest value
 * did not come from the socket's counter: a Linux socket numbers every segment it sends
 * one by one, so a pure ACK or FIN lands within a few IDs of the data around it. */
#define IP_ID_OUT_OF_BAND_JUMP 1024

static int ip_id_out_of_band(int have_id, int64_t id_hi, uint16_t raw, int64_t payload_len)
{
    if (payload_len > 0)
        return 0;
    if (!have_id)
        return raw == 0;
    int64_t delta = (int16_t)(uint16_t)(raw - (uint16_t)id_hi);
    return delta > IP_ID_OUT_OF_BAND_JUMP || delta < -IP_ID_OUT_OF_BAND_JUMP;
}

static PyObject *bytes_of(Py_ssize_t n) { return PyByteArray_FromStringAndSize(NULL, n); }

/*
 * analyze(n_slots, slot, ts_ns, seq, ack, tcp_flags, payload_len, window,
 *         ip_id, decode_flags, ttl, has_ts, tsval, tsecr, sack_count,
 *         sack_left, sack_right, mode, mss, id_per_packet)
 * -> (kind u8[N], rtt_us f64[N], rtt_slot i32[N], in_flight i64[N],
 *     id64 i64[N], stats i64[n_slots, S_N_FIELDS])
 */
static PyObject *analyze(PyObject *self, PyObject *args) {
    Py_ssize_t n_slots;
    PyObject *o[19];
    if (!PyArg_ParseTuple(args, "nOOOOOOOOOOOOOOOOOOO", &n_slots, &o[0], &o[1], &o[2], &o[3], &o[4],
                          &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14],
                          &o[15], &o[16], &o[17], &o[18]))
        return NULL;
    Buf b[19];
    memset(b, 0, sizeof(b));
    PyObject *result = NULL, *kind_o = NULL, *rtt_o = NULL, *rslot_o = NULL, *fl_o = NULL,
             *id_o = NULL, *st_o = NULL;
    Slot *slots = NULL;
    Py_ssize_t n = 0;
    if (PyObject_GetBuffer(o[0], &b[0].b, PyBUF_C_CONTIGUOUS) < 0) goto done;
    b[0].ok = 1;
    n = b[0].b.len / 4;
    const Py_ssize_t sizes[19] = {4, 8, 4, 4, 2, 4, 2, 4, 1, 1, 1, 4, 4, 1,
                                  4 * MAX_SACK, 4 * MAX_SACK, 1, 8, 1};
    const char *names[19] = {"slot", "ts_ns", "seq", "ack", "tcp_flags", "payload_len", "window",
                             "ip_id", "decode_flags", "ttl", "has_ts", "tsval", "tsecr", "sack_count",
                             "sack_left", "sack_right", "mode", "mss", "id_per_packet"};
    for (int i = 1; i < 19; i++) {
        Py_ssize_t count = (i >= 16) ? n_slots : n;
        if (get_buf(o[i], &b[i], sizes[i], count, names[i]) < 0) goto done;
    }
    const int32_t *slot_of = b[0].b.buf;
    const int64_t *ts = b[1].b.buf;
    const uint32_t *seq = b[2].b.buf, *ackn = b[3].b.buf;
    const uint16_t *flags = b[4].b.buf;
    const uint32_t *plen = b[5].b.buf;
    const uint16_t *win = b[6].b.buf;
    const uint32_t *ipid = b[7].b.buf;
    const uint8_t *dflags = b[8].b.buf, *ttl = b[9].b.buf, *has_ts = b[10].b.buf;
    const uint32_t *tsval = b[11].b.buf, *tsecr = b[12].b.buf;
    const uint8_t *sack_n = b[13].b.buf;
    const uint32_t *sack_l = b[14].b.buf, *sack_r = b[15].b.buf;
    const int8_t *mode = b[16].b.buf;
    const int64_t *mss_in = b[17].b.buf;
    const uint8_t *id_pp = b[18].b.buf;

    kind_o = bytes_of(n); rtt_o = bytes_of(n * 8); rslot_o = bytes_of(n * 4); fl_o = bytes_of(n * 8);
    id_o = bytes_of(n * 8); st_o = bytes_of(n_slots * S_N_FIELDS * 8);
    if (!kind_o || !rtt_o || !rslot_o || !fl_o || !id_o || !st_o) goto done;
    uint8_t *kind = (uint8_t *)PyByteArray_AS_STRING(kind_o);
    double *rtt_us = (double *)PyByteArray_AS_STRING(rtt_o);
    int32_t *rtt_slot = (int32_t *)PyByteArray_AS_STRING(rslot_o);
    int64_t *in_flight = (int64_t *)PyByteArray_AS_STRING(fl_o);
    int64_t *id64 = (int64_t *)PyByteArray_AS_STRING(id_o);
    int64_t *st = (int64_t *)PyByteArray_AS_STRING(st_o);

    slots = calloc((size_t)(n_slots ? n_slots : 1), sizeof(Slot));
    if (!slots) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t k = 0; k < n_slots; k++) {
        int64_t *S = st + k * S_N_FIELDS;
        memset(S, 0, sizeof(int64_t) * S_N_FIELDS);
        S[S_FIRST_DATA_TS] = S[S_LAST_DATA_TS] = S[S_SYN_TS] = S[S_SYNACK_TS] = S[S_FIRST_ACK_TS] = -1;
        S[S_TTL_MIN] = 256; S[S_TTL_MAX] = -1;
        slots[k].mss = mss_in[k];
        slots[k].min_rtt_ns = -1;
        slots[k].rtt = NULL;
    }

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        kind[i] = KIND_NONE; rtt_us[i] = NAN; rtt_slot[i] = -1; in_flight[i] = -1; id64[i] = -1;
        int32_t k = slot_of[i];
        if (k < 0 || k >= n_slots) continue;
        if (dflags[i] & (DECODE_IP_FRAGMENT | DECODE_IN_ICMP_ERROR)) continue;
        Slot *s = &slots[k];
        Slot *p = &slots[k ^ 1];          /* the peer direction */
        int64_t *S = st + (int64_t)k * S_N_FIELDS;
        int64_t *P = st + (int64_t)(k ^ 1) * S_N_FIELDS;
        const int64_t now = ts[i];
        const uint16_t f = flags[i];
        const int64_t len = plen[i];
        S[S_PACKETS]++;
        if (ttl[i] < S[S_TTL_MIN]) S[S_TTL_MIN] = ttl[i];
        if (ttl[i] > S[S_TTL_MAX]) S[S_TTL_MAX] = ttl[i];

        /* IP ID: unwrap the 16-bit counter; SYNs may carry 0 before it starts, and
         * segments without payload that the kernel sends outside the socket (RSTs,
         * TIME-WAIT ACKs, from a per-namespace control socket) carry 0 or an unrelated
         * ID: keep those out of the per-socket sequence. */
        if ((dflags[i] & DECODE_IP_ID_VALID) && !(f & TCP_SYN)
                && !ip_id_out_of_band(s->have_id, s->id_hi, (uint16_t)ipid[i], len)) {
            uint16_t raw = (uint16_t)ipid[i];
            /* A super-segment (TSO/GSO at the sender, GRO/LRO at the receiver) of k segments
             * carries the first of the k consecutive IDs its segments had (or will have). */
            int64_t last = segments_of(len, s->mss) - 1;
            int64_t v;
            if (last < 0) last = 0;
            if (raw == 0) S[S_ID_ZERO]++;
            if (!s->have_id) { v = raw; s->have_id = 1; s->id_hi = v + last; }
            else {
                v = s->id_hi + (int16_t)(uint16_t)(raw - (uint16_t)s->id_hi);
                S[S_ID_STEPS]++;
                if (v == s->last_id + 1) S[S_ID_STEP1]++;
                if (v > s->last_id) S[S_ID_FORWARD_STEPS]++;
                if (v + last > s->id_hi) s->id_hi = v + last;
            }
            s->last_id = v + last;
            id64[i] = v;
        }

        /* handshake timing */
        if ((f & TCP_SYN) && !(f & TCP_ACK) && S[S_SYN_TS] < 0) S[S_SYN_TS] = now;
        if ((f & TCP_SYN) && (f & TCP_ACK) && S[S_SYNACK_TS] < 0) S[S_SYNACK_TS] = now;
        if (!(f & (TCP_SYN | TCP_RST)) && (f & TCP_ACK) && S[S_FIRST_ACK_TS] < 0 && P[S_SYNACK_TS] >= 0)
            S[S_FIRST_ACK_TS] = now;

        /* anchor this slot's sequence space */
        if (f & TCP_SYN) {
            if (!s->have_ref) {
                s->have_ref = 1;
                s->base = (int64_t)seq[i] + 1;
                s->hi_end = s->base;
                s->snd_una = s->base;
            }
        } else if (!s->have_ref && (len > 0 || (f & TCP_ACK))) {
            s->have_ref = 1;
            s->base = seq[i];
            s->hi_end = s->base;
            s->snd_una = s->base;
        }

        if (mode[k] == MODE_EVIDENCE) {
            /* The first pass only gathers the vantage evidence: TTLs, handshake times and
             * IP-ID steps (above), and whether data jumps forward (a hole) or repeats, as a
             * sender-style pass would count it. ACKs, SACK, RTT and holes are not needed. */
            if (!(f & (TCP_SYN | TCP_RST))) { p->peer_window = win[i]; p->peer_window_known = 1; }
            if (len > 0 && s->have_ref) {
                int64_t lo = unwrap32(s->hi_end, seq[i]) + ((f & TCP_SYN) ? 1 : 0);
                int64_t hi = lo + len;
                S[S_DATA_PACKETS]++;
                if (lo > s->hi_end)
                    S[S_FORWARD_JUMPS]++;
                else if (lo < s->hi_end &&
                         !(len == 1 && hi == s->hi_end && s->peer_window_known && s->peer_window == 0))
                    S[S_RETRANS] += segments_of(len, s->mss);
                if (hi > s->hi_end) s->hi_end = hi;
            }
            continue;
        }

        /* ---- this packet as an acknowledgment of the peer's data ---- */
        if ((f & TCP_ACK) && p->have_ref && !(f & TCP_RST)) {
            int64_t a = unwrap32(p->hi_end, ackn[i]);
            /* the ACK of a FIN is one past the data */
            if (a > p->hi_end + 1) a = p->hi_end + 1;
            int64_t a_data = a > p->hi_end ? p->hi_end : a;
            if (!p->have_una || a > p->snd_una) {
                int first = !p->have_una;
                p->have_una = 1;
                if (!first && a_data > p->snd_una && p->nholes > 0) {
                    /* data the peer acknowledges that the capture never saw */
                    Hole first_hole; int found;
                    int64_t gap = holes_cut(p, p->snd_una, a_data, &first_hole, &found);
                    if (gap > 0) {
                        P[S_CAPTURE_GAP_BYTES] += gap;
                        P[S_CAPTURE_GAPS] += segments_of(gap, p->mss);
                    }
                }
                /* RTT sample: the newest segment this ACK covers (Karn: none
                 * while the covered range holds retransmitted data) */
                int64_t sample_ts = -1;
                while (p->rtt_len > 0) {
                    RttEntry *e = &p->rtt[p->rtt_head];
                    if (e->end > a_data) break;
                    sample_ts = e->ts_ns;
                    p->rtt_head = (p->rtt_head + 1) % RTT_RING; p->rtt_len--;
                }
                if (!first && sample_ts >= 0 && p->snd_una >= p->karn_hi && mode[k ^ 1] == MODE_SENDER) {
                    int64_t r = now - sample_ts;
                    if (r >= 0) {
                        rtt_us[i] = (double)r / 1000.0;
                        rtt_slot[i] = k ^ 1;
                        if (p->min_rtt_ns < 0 || r < p->min_rtt_ns) p->min_rtt_ns = r;
                    }
                }
                if (a > p->snd_una || first) { p->snd_una = a_data; }
                p->dupacks = 0;
                p->sack_evidence = 0;
                p->last_adv_ns = now;
                if (p->recovery_kind && p->snd_una >= p->recovery_point) p->recovery_kind = 0;
            } else if (a == p->snd_una && len == 0 && !(f & (TCP_SYN | TCP_FIN)) &&
                       p->hi_end > a && p->peer_window_known && win[i] == p->peer_window) {
                p->dupacks++;
                P[S_DUP_ACKS]++;
            }
            /* SACK blocks: D-SACK when the first block lies below the
             * cumulative ACK or inside the second block (RFC 2883) */
            int nb = sack_n[i] > MAX_SACK ? MAX_SACK : sack_n[i];
            int64_t L[MAX_SACK], R[MAX_SACK];
            for (int j = 0; j < nb; j++) {
                L[j] = unwrap32(p->hi_end, sack_l[i * MAX_SACK + j]);
                R[j] = unwrap32(p->hi_end, sack_r[i * MAX_SACK + j]);
            }
            int first_regular = 0;
            if (nb > 0 && R[0] > L[0] &&
                (R[0] <= a || (nb > 1 && L[1] <= L[0] && R[0] <= R[1]))) {
                first_regular = 1;
                P[S_DSACK_BLOCKS]++;
                if (mode[k ^ 1] == MODE_SENDER || mode[k ^ 1] == MODE_IN_PATH) {
                    /* the newest retransmission inside it was not needed (in path: it was
                     * not lost downstream either, the receiver had it twice) */
                    for (int q = 0; q < p->retx_len; q++) {
                        RetxEntry *e = &p->retx[(p->retx_head + p->retx_len - 1 - q) % RETX_RING];
                        if (!e->spurious && e->lo >= L[0] && e->hi <= R[0]) {
                            int64_t segs = segments_of(e->hi - e->lo, p->mss);
                            e->spurious = 1;
                            kind[e->pkt] = KIND_SPURIOUS;
                            P[S_SPURIOUS] += segs;
                            if (e->downstream) { P[S_DOWNSTREAM_RETRANS] -= segs; e->downstream = 0; }
                            break;
                        }
                    }
                }
            }
            if (nb > 0) {
                int nkeep = 0;
                for (int j = first_regular; j < nb; j++) {
                    if (R[j] <= L[j]) continue;
                    P[S_SACK_BLOCKS]++;
                    p->sack_lo[nkeep] = L[j]; p->sack_hi[nkeep] = R[j]; nkeep++;
                }
                p->nsack = nkeep;
                if (nkeep > 0) p->sack_evidence = 1;
            } else {
                p->nsack = 0;
            }
        }
        /* this packet announces its sender's receive window: it limits the peer */
        if (!(f & (TCP_SYN | TCP_RST))) {
            if (win[i] == 0 && p->peer_window_known && p->peer_window != 0 && p->hi_end > p->base)
                P[S_ZERO_WINDOW_EVENTS]++;
            p->peer_window = win[i];
            p->peer_window_known = 1;
        }

        /* ---- this packet as data ---- */
        if (len <= 0 || !s->have_ref) continue;
        int64_t lo = unwrap32(s->hi_end, seq[i]) + ((f & TCP_SYN) ? 1 : 0);
        int64_t hi = lo + len;
        int64_t nseg = segments_of(len, s->mss);
        S[S_DATA_PACKETS]++;
        S[S_DATA_SEGMENTS] += nseg;
        S[S_PAYLOAD_BYTES] += len;
        if (len > S[S_MAX_PAYLOAD]) S[S_MAX_PAYLOAD] = len;
        if (nseg > 1) S[S_SUPER_SEGMENT_FRAMES]++;
        if (S[S_FIRST_DATA_TS] < 0) S[S_FIRST_DATA_TS] = now;
        S[S_LAST_DATA_TS] = now;
        int64_t idle_ref = s->last_tx_ns > s->last_adv_ns ? s->last_tx_ns : s->last_adv_ns;
        int64_t idle = now - idle_ref;
        s->last_tx_ns = now;
        int k_mode = mode[k];

        if (lo >= s->hi_end) {
            /* new data; a jump past hi_end leaves a hole */
            if (lo > s->hi_end) {
                S[S_FORWARD_JUMPS]++;
                if (k_mode != MODE_SENDER) {
                    Hole h = {s->hi_end, lo, now, id64[i] >= 0 ? id64[i] : -1,
                              tsval[i], has_ts[i] ? 1 : 0};
                    holes_append(s, h);
                }
            }
            kind[i] = KIND_ORIGINAL;
            S[S_UNIQUE_BYTES] += len;
            s->hi_end = hi;
            if (k_mode == MODE_SENDER) {
                if (s->rtt == NULL) s->rtt = malloc(sizeof(RttEntry) * RTT_RING);
                if (s->rtt) {
                    if (s->rtt_len == RTT_RING) { s->rtt_head = (s->rtt_head + 1) % RTT_RING; s->rtt_len--; }
                    s->rtt[(s->rtt_head + s->rtt_len) % RTT_RING] = (RttEntry){hi, now};
                    s->rtt_len++;
                }
            }
        } else if (len == 1 && hi == s->hi_end && s->peer_window_known && s->peer_window == 0) {
            /* a one-byte zero-window probe repeated: not loss */
            kind[i] = KIND_WINDOW_PROBE;
            S[S_WINDOW_PROBES]++;
        } else {
            int64_t newpart = hi > s->hi_end ? hi - s->hi_end : 0;
            if (newpart > 0) { S[S_UNIQUE_BYTES] += newpart; s->hi_end = hi; }
            int spurious = 0, reordered = 0, filled = 0, downstream = 0;
            if (k_mode != MODE_SENDER) {
                Hole h; int found;
                int64_t cut = holes_cut(s, lo, hi, &h, &found);
                if (cut > 0) {
                    filled = 1;
                    S[S_UNIQUE_BYTES] += cut;
                    /* late original or retransmission? */
                    if (id_pp[k] && id64[i] >= 0 && h.reveal_id >= 0) {
                        reordered = id64[i] < h.reveal_id;
                    } else if (has_ts[i] && h.has_ts && tsval[i] != h.reveal_tsval) {
                        reordered = (int32_t)(tsval[i] - h.reveal_tsval) < 0;
                    } else {
                        int64_t thr = s->min_rtt_ns > 0 ? s->min_rtt_ns / REORDER_RTT_DIV : REORDER_DEFAULT_NS;
                        if (p->min_rtt_ns > 0 && s->min_rtt_ns <= 0) thr = p->min_rtt_ns / REORDER_RTT_DIV;
                        reordered = (now - h.created_ns) < thr;
                    }
                } else if (k_mode == MODE_RECEIVER) {
                    spurious = 1;   /* the receiver already had all of it */
                } else {
                    /* in path: it passed here before; needed again unless the receiver had
                     * acknowledged or SACKed it by now (then the repeat was not needed) */
                    if (s->have_una && hi <= s->snd_una) spurious = 1;
                    for (int j = 0; j < s->nsack && !spurious; j++)
                        if (lo >= s->sack_lo[j] && hi <= s->sack_hi[j]) spurious = 1;
                    downstream = !spurious;
                }
            } else {
                /* sender-style: already acknowledged or SACKed when sent */
                if (s->have_una && hi <= s->snd_una) spurious = 1;
                for (int j = 0; j < s->nsack && !spurious; j++)
                    if (lo >= s->sack_lo[j] && hi <= s->sack_hi[j]) spurious = 1;
            }
            if (reordered) {
                kind[i] = KIND_REORDERED;
                S[S_REORDERED] += nseg;
            } else {
                int64_t rseg = segments_of(len - newpart, s->mss);
                int rk;
                if (s->recovery_kind == KIND_RETRANS_RTO) rk = KIND_RETRANS_RTO;
                else if (lo <= s->snd_una && idle >= RTO_MIN_NS) {
                    rk = KIND_RETRANS_RTO; s->recovery_kind = rk; s->recovery_point = s->hi_end;
                } else if (s->recovery_kind == KIND_RETRANS_FAST) rk = KIND_RETRANS_FAST;
                else if (s->dupacks > 0 || s->sack_evidence) {
                    rk = KIND_RETRANS_FAST; s->recovery_kind = rk; s->recovery_point = s->hi_end;
                } else if (hi >= s->hi_end) rk = KIND_RETRANS_TLP;
                else rk = KIND_RETRANS_OTHER;
                S[S_RETRANS] += rseg;
                S[S_RETRANS_BYTES] += len - newpart;
                S[rk == KIND_RETRANS_FAST ? S_RETRANS_FAST : rk == KIND_RETRANS_RTO ? S_RETRANS_RTO
                  : rk == KIND_RETRANS_TLP ? S_RETRANS_TLP : S_RETRANS_OTHER] += rseg;
                if (filled) S[S_HOLE_FILL_RETRANS] += rseg;
                if (downstream) S[S_DOWNSTREAM_RETRANS] += rseg;
                kind[i] = spurious ? KIND_SPURIOUS : (uint8_t)rk;
                if (spurious) S[S_SPURIOUS] += rseg;
                if (hi > s->karn_hi) s->karn_hi = hi;
                RetxEntry *e = &s->retx[(s->retx_head + s->retx_len) % RETX_RING];
                if (s->retx_len == RETX_RING) { s->retx_head = (s->retx_head + 1) % RETX_RING; s->retx_len--; }
                e = &s->retx[(s->retx_head + s->retx_len) % RETX_RING];
                *e = (RetxEntry){lo, hi, i, spurious, downstream};
                s->retx_len++;
            }
        }

        /* bytes in flight after this segment: highest sent - cumulative ACK - SACKed */
        if (s->have_una) {
            int64_t flight = s->hi_end - s->snd_una;
            for (int j = 0; j < s->nsack; j++) {
                int64_t L = s->sack_lo[j] > s->snd_una ? s->sack_lo[j] : s->snd_una;
                int64_t R = s->sack_hi[j] < s->hi_end ? s->sack_hi[j] : s->hi_end;
                if (R > L) flight -= R - L;
            }
            in_flight[i] = flight > 0 ? flight : 0;
        }

    }

    /* receiver-style RTT: the peer's ACK TSval echoed in this side's TSecr.
     * Second, independent pass keeps the main loop simple. */
    for (Py_ssize_t k = 0; k < n_slots; k++) { slots[k].tsv_head = 0; slots[k].tsv_len = 0; }
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t k = slot_of[i];
        if (k < 0 || k >= n_slots || !has_ts[i]) continue;
        if (dflags[i] & (DECODE_IP_FRAGMENT | DECODE_IN_ICMP_ERROR)) continue;
        Slot *s = &slots[k], *p = &slots[k ^ 1];
        /* as the receiver (peer slot is receiver-style): record our TSval */
        if (mode[k ^ 1] >= MODE_RECEIVER && plen[i] == 0) {
            if (!s->tsv_last_valid || s->tsv_last != tsval[i]) {
                s->tsv_last = tsval[i]; s->tsv_last_valid = 1;
                if (s->tsv_len == 64) { s->tsv_head = (s->tsv_head + 1) % 64; s->tsv_len--; }
                int at = (s->tsv_head + s->tsv_len) % 64;
                s->tsv[at] = tsval[i]; s->tsv_ns[at] = ts[i]; s->tsv_len++;
            }
        }
        /* as the data sender seen from the receiver: our TSecr echoes the peer */
        if (mode[k] >= MODE_RECEIVER && plen[i] > 0 && tsecr[i] != 0) {
            while (p->tsv_len > 0 && (int32_t)(p->tsv[p->tsv_head] - tsecr[i]) < 0) {
                p->tsv_head = (p->tsv_head + 1) % 64; p->tsv_len--;
            }
            if (p->tsv_len > 0 && p->tsv[p->tsv_head] == tsecr[i]) {
                int64_t r = ts[i] - p->tsv_ns[p->tsv_head];
                if (r >= 0) { rtt_us[i] = (double)r / 1000.0; rtt_slot[i] = k; }
                p->tsv_head = (p->tsv_head + 1) % 64; p->tsv_len--;
            }
        }
    }
    for (Py_ssize_t k = 0; k < n_slots; k++) {
        int64_t unfilled = 0;
        for (int j = 0; j < slots[k].nholes; j++) unfilled += slots[k].holes[j].hi - slots[k].holes[j].lo;
        st[k * S_N_FIELDS + S_UNFILLED_HOLE_BYTES] = unfilled;
    }
    Py_END_ALLOW_THREADS

    result = PyTuple_Pack(6, kind_o, rtt_o, rslot_o, fl_o, id_o, st_o);
done:
    if (slots) {
        for (Py_ssize_t k = 0; k < n_slots; k++) { free(slots[k].holes); free(slots[k].rtt); }
        free(slots);
    }
    for (int i = 0; i < 19; i++) if (b[i].ok) PyBuffer_Release(&b[i].b);
    Py_XDECREF(kind_o); Py_XDECREF(rtt_o); Py_XDECREF(rslot_o); Py_XDECREF(fl_o);
    Py_XDECREF(id_o); Py_XDECREF(st_o);
    return result;
}

static PyMethodDef methods[] = {
    {"analyze", analyze, METH_VARARGS,
     "One pass of truth-seeking TCP classification over a packet table (see truth.py)."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_truth", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__truth(void) { return PyModule_Create(&module); }
