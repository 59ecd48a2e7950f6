/* streams.c -- TCP conversations numbered exactly as tshark 4.0 numbers tcp.stream.
 *
 * Model (Wireshark 4.0 packet-tcp.c, dissect_tcp + conversation.c):
 *  - A conversation is keyed by the unordered pair (address, port) x 2. A frame belongs to the
 *    newest conversation with its key; a frame whose key has none creates one, and every
 *    conversation created takes the next stream number, in frame order.
 *  - Port reuse: a pure SYN (SYN without ACK) whose sequence number differs from the base
 *    sequence number already recorded for its direction starts a new conversation. A SYN
 *    repeating that base (a retransmitted SYN) stays. A SYN/ACK with a different sequence
 *    number only re-bases its direction; it never starts a conversation.
 *  - The base sequence of a direction is recorded by the first frame analysed in it (SYN: its
 *    seq; otherwise seq - 1), or, before that, by the first ACK-carrying frame of the other
 *    direction (ack - 1). Frames that are IP fragments or quoted inside ICMP errors are not
 *    analysed, so they set no base, but they do find or create conversations.
 *  - Window scale per direction: a window scale option stores its shift (clamped to 14) for
 *    the sender's direction, whatever the frame; after a SYN's options, if its direction has no
 *    shift, both directions are marked unscaled; a SYN/ACK with a shift after a SYN without one
 *    is unscaled too. Unknown stays unknown (-1).
 */
#include <stdlib.h>
#include <string.h>

#include "tcp_native.h"

#define ADDR_BYTES       16
#define KEY_BYTES        (2 * ADDR_BYTES + 4) /* two addresses, two 16-bit ports */
#define WSCALE_MAX_SHIFT 14                   /* RFC 7323: larger shifts are treated as 14 */
#define WSCALE_UNKNOWN   (-1)
#define WSCALE_NONE      (-2)         /* known: no scaling (tshark's -2) */
#define TWO_POW_32       4294967296LL /* size of the 32-bit sequence space, in sequence numbers */

typedef struct {
    uint8_t key[KEY_BYTES];
    int32_t conversation; /* newest conversation with this key; -1 empty bucket */
} bucket_t;

typedef struct {
    bucket_t *buckets;
    size_t capacity; /* power of two */
    size_t used;
} table_t;

/* Per-conversation working state that is not part of the output table. */
typedef struct {
    uint32_t base_seq[2];
    uint8_t base_set[2];
    int8_t win_scale[2]; /* WSCALE_UNKNOWN, WSCALE_NONE or a shift */
    int64_t seq_ref[2];  /* highest unwrapped value seen in direction d's sequence space */
    uint8_t seq_ref_set[2];
} conv_state_t;

static uint64_t hash_key(const uint8_t *key) {
    /* Multiply-xorshift over 8-byte words of the key. A byte-wise FNV-1a (36 dependent
     * multiplies) cost ~40 ns per frame, most of this pass; this costs a few. */
    uint64_t h = 0x9E3779B97F4A7C15ULL, word;
    int i = 0;
    for (; i + 8 <= KEY_BYTES; i += 8) {
        memcpy(&word, key + i, 8);
        h = (h ^ word) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    for (; i < KEY_BYTES; i++) h = (h ^ key[i]) * 0x100000001b3ULL;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

static int table_init(table_t *t, size_t capacity) {
    t->buckets = malloc(capacity * sizeof(bucket_t));
    if (!t->buckets) return -1;
    for (size_t i = 0; i < capacity; i++) t->buckets[i].conversation = -1;
    t->capacity = capacity;
    t->used = 0;
    return 0;
}

static bucket_t *table_find(table_t *t, const uint8_t *key) {
    size_t mask = t->capacity - 1;
    size_t i = (size_t)hash_key(key) & mask;
    for (;;) {
        bucket_t *s = &t->buckets[i];
        if (s->conversation < 0 || memcmp(s->key, key, KEY_BYTES) == 0) return s;
        i = (i + 1) & mask;
    }
}

static int table_grow(table_t *t) {
    table_t bigger;
    if (table_init(&bigger, t->capacity * 2) < 0) return -1;
    for (size_t i = 0; i < t->capacity; i++) {
        if (t->buckets[i].conversation >= 0) {
            bucket_t *s = table_find(&bigger, t->buckets[i].key);
            *s = t->buckets[i];
            bigger.used++;
        }
    }
    free(t->buckets);
    *t = bigger;
    return 0;
}

/* The unordered key of a frame: the lower (address, port) endpoint first. */
static void make_key(uint8_t *key, const uint8_t *src, uint16_t sport, const uint8_t *dst, uint16_t dport) {
    int c = memcmp(src, dst, ADDR_BYTES);
    int src_first = c < 0 || (c == 0 && sport <= dport);
    const uint8_t *lo = src_first ? src : dst, *hi = src_first ? dst : src;
    uint16_t lo_port = src_first ? sport : dport, hi_port = src_first ? dport : sport;
    memcpy(key, lo, ADDR_BYTES);
    memcpy(key + ADDR_BYTES, hi, ADDR_BYTES);
    key[2 * ADDR_BYTES] = (uint8_t)(lo_port >> 8);
    key[2 * ADDR_BYTES + 1] = (uint8_t)lo_port;
    key[2 * ADDR_BYTES + 2] = (uint8_t)(hi_port >> 8);
    key[2 * ADDR_BYTES + 3] = (uint8_t)hi_port;
}

static int streams_reserve(tcp_streams_t *s, conv_state_t **state, size_t need) {
    if (need <= s->capacity) return 0;
    size_t cap = s->capacity ? s->capacity * 2 : 64;
    while (cap < need) cap *= 2;
#define GROW(field, per_row)                                                                                           \
    do {                                                                                                               \
        void *p = realloc(s->field, cap * (per_row) * sizeof(*s->field));                                              \
        if (!p) return -1;                                                                                             \
        s->field = p;                                                                                                  \
    } while (0)
    GROW(a_addr, ADDR_BYTES);
    GROW(b_addr, ADDR_BYTES);
    GROW(a_port, 1);
    GROW(b_port, 1);
    GROW(first_frame, 1);
    GROW(last_frame, 1);
    GROW(packets, 2);
    GROW(payload_bytes, 2);
    GROW(syn_seen, 1);
    GROW(window_scale, 2);
    GROW(mss, 2);
    GROW(sack_permitted, 2);
    GROW(timestamps, 2);
#undef GROW
    void *p = realloc(*state, cap * sizeof(conv_state_t));
    if (!p) return -1;
    *state = p;
    s->capacity = cap;
    return 0;
}

static int32_t new_conversation(tcp_streams_t *s, conv_state_t **state, size_t frame, const uint8_t *src,
                                uint16_t sport, const uint8_t *dst, uint16_t dport) {
    if (streams_reserve(s, state, s->count + 1) < 0) return -1;
    size_t c = s->count++;
    memcpy(s->a_addr + c * ADDR_BYTES, src, ADDR_BYTES);
    memcpy(s->b_addr + c * ADDR_BYTES, dst, ADDR_BYTES);
    s->a_port[c] = sport;
    s->b_port[c] = dport;
    s->first_frame[c] = -1;
    s->last_frame[c] = -1;
    s->syn_seen[c] = 0;
    for (int d = 0; d < 2; d++) {
        s->packets[2 * c + d] = 0;
        s->payload_bytes[2 * c + d] = 0;
        s->window_scale[2 * c + d] = WSCALE_UNKNOWN;
        s->mss[2 * c + d] = -1;
        s->sack_permitted[2 * c + d] = 0;
        s->timestamps[2 * c + d] = 0;
    }
    conv_state_t *st = &(*state)[c];
    memset(st, 0, sizeof(*st));
    st->win_scale[0] = st->win_scale[1] = WSCALE_UNKNOWN;
    (void)frame;
    return (int32_t)c;
}

/* Unwraps a raw 32-bit sequence number against the highest value seen in its space. */
static int64_t unwrap(conv_state_t *st, int space, uint32_t raw) {
    int64_t v;
    if (!st->seq_ref_set[space]) {
        v = raw;
        st->seq_ref_set[space] = 1;
        st->seq_ref[space] = v;
        return v;
    }
    int64_t ref = st->seq_ref[space];
    v = ref + (int32_t)(raw - (uint32_t)ref);
    if (v < 0) v += TWO_POW_32;
    if (v > ref) st->seq_ref[space] = v;
    return v;
}

int tcp_assign_streams(const tcp_packets_t *pk, tcp_frame_streams_t *out, tcp_streams_t *s) {
    table_t table;
    conv_state_t *state = NULL;
    uint8_t key[KEY_BYTES];
    memset(s, 0, sizeof(*s));
    if (table_init(&table, 1024) < 0) return -1;

    for (size_t i = 0; i < pk->n_frames; i++) {
        out->stream[i] = -1;
        out->conversation[i] = -1;
        out->direction[i] = 0;
        out->seq64[i] = -1;
        out->ack64[i] = -1;
        if (pk->tcp_header_len[i] == 0) continue;

        const uint8_t *src = pk->src_addr + i * ADDR_BYTES, *dst = pk->dst_addr + i * ADDR_BYTES;
        uint16_t sport = pk->sport[i], dport = pk->dport[i];
        uint16_t flags = pk->tcp_flags[i];
        uint32_t seq = pk->seq[i], ack = pk->ack[i];
        int in_error = (pk->decode_flags[i] & DECODE_IN_ICMP_ERROR) != 0;
        int analysed = !in_error && !(pk->decode_flags[i] & DECODE_IP_FRAGMENT);

        if (table.used * 2 >= table.capacity && table_grow(&table) < 0) goto fail;
        make_key(key, src, sport, dst, dport);
        bucket_t *bucket = table_find(&table, key);
        int32_t c = bucket->conversation;
        if (c < 0) {
            c = new_conversation(s, &state, i, src, sport, dst, dport);
            if (c < 0) goto fail;
            memcpy(bucket->key, key, KEY_BYTES);
            bucket->conversation = c;
            table.used++;
        }
        int dir = !(memcmp(src, s->a_addr + (size_t)c * ADDR_BYTES, ADDR_BYTES) == 0 && sport == s->a_port[c]);
        conv_state_t *st = &state[c];

        if ((flags & (TH_SYN | TH_ACK)) == TH_SYN && st->base_set[dir] && seq != st->base_seq[dir]) {
            /* Port reuse: a new connection on the same address/port pair. */
            c = new_conversation(s, &state, i, src, sport, dst, dport);
            if (c < 0) goto fail;
            bucket->conversation = c;
            dir = 0;
            st = &state[c];
        } else if ((flags & (TH_SYN | TH_ACK)) == (TH_SYN | TH_ACK) && st->base_set[dir] && seq != st->base_seq[dir]) {
            st->base_seq[dir] = seq;
        }
        if (analysed) {
            if (!st->base_set[dir]) {
                st->base_seq[dir] = (flags & TH_SYN) ? seq : seq - 1;
                st->base_set[dir] = 1;
            }
            if (!st->base_set[!dir] && (flags & TH_ACK)) {
                st->base_seq[!dir] = ack - 1;
                st->base_set[!dir] = 1;
            }
        }

        /* Options, in tshark's order: the window scale option, then the SYN check. */
        if (pk->opt_wscale[i] >= 0)
            st->win_scale[dir] = pk->opt_wscale[i] > WSCALE_MAX_SHIFT ? WSCALE_MAX_SHIFT : pk->opt_wscale[i];
        if (flags & TH_SYN) {
            if (st->win_scale[dir] == WSCALE_UNKNOWN) {
                st->win_scale[dir] = WSCALE_NONE;
                st->win_scale[!dir] = WSCALE_NONE;
            } else if ((flags & TH_ACK) && st->win_scale[!dir] == WSCALE_NONE) {
                st->win_scale[dir] = WSCALE_NONE;
            }
        }
        for (int d = 0; d < 2; d++) {
            int8_t w = st->win_scale[d];
            s->window_scale[2 * (size_t)c + d] = w == WSCALE_NONE ? 0 : w;
        }

        out->conversation[i] = c;
        out->direction[i] = (uint8_t)dir;
        if (in_error) continue;

        out->stream[i] = c;
        if (s->first_frame[c] < 0) s->first_frame[c] = (int64_t)i;
        s->last_frame[c] = (int64_t)i;
        s->packets[2 * (size_t)c + dir] += 1;
        s->payload_bytes[2 * (size_t)c + dir] += pk->tcp_payload_len[i];
        if (flags & TH_SYN) {
            size_t k = 2 * (size_t)c + dir;
            s->syn_seen[c] = 1;
            s->mss[k] = pk->opt_mss[i] ? (int32_t)pk->opt_mss[i] : -1;
            s->sack_permitted[k] = pk->opt_sack_permitted[i] != 0;
            s->timestamps[k] = pk->opt_has_ts[i] != 0;
        }
        out->seq64[i] = unwrap(st, dir, seq);
        if (flags & TH_ACK) out->ack64[i] = unwrap(st, !dir, ack);
    }
    free(table.buckets);
    free(state);
    return 0;
fail:
    free(table.buckets);
    free(state);
    tcp_streams_free(s);
    return -1;
}

void tcp_streams_free(tcp_streams_t *s) {
    free(s->a_addr);
    free(s->b_addr);
    free(s->a_port);
    free(s->b_port);
    free(s->first_frame);
    free(s->last_frame);
    free(s->packets);
    free(s->payload_bytes);
    free(s->syn_seen);
    free(s->window_scale);
    free(s->mss);
    free(s->sack_permitted);
    free(s->timestamps);
    memset(s, 0, sizeof(*s));
}
