/*
 * fuzz_truth.c -- libFuzzer entry for the truth-seeking pass (truth_core.h).
 *
 * Each input describes a small packet table: the first byte the number of
 * directions (2-8, in pairs), then per direction its mode, MSS, IP-ID numbering and SACK use, then
 * fixed-size packet rows until the input ends. Timestamps advance by the row's
 * step (backwards sometimes, as in captures whose clock stepped) within the range
 * the decoder produces; every other field takes any value, directions included
 * (out of range ones are skipped by contract). Every output array is allocated to
 * its exact size so AddressSanitizer catches any write past it; UBSan catches
 * signed overflow and shifts; the invariants below catch nonsense counts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "truth_core.h"

#define MAX_DIRECTIONS  8
#define DIRECTION_BYTES 4
#define ROW_BYTES       44
/* pcap timestamps: 32-bit seconds in nanoseconds stay below 2^62. */
#define TS_LIMIT_NS (1LL << 62)

static uint32_t u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int64_t n_dirs = 2 * (1 + data[0] % (MAX_DIRECTIONS / 2)); /* pairs: d and d ^ 1 */
    size_t head = 1 + (size_t)n_dirs * DIRECTION_BYTES;
    if (size < head) return 0;
    int64_t n = (int64_t)((size - head) / ROW_BYTES);
    const uint8_t *row = data + head;

    int8_t mode[MAX_DIRECTIONS];
    int64_t mss[MAX_DIRECTIONS];
    uint8_t id_pp[MAX_DIRECTIONS], sack[MAX_DIRECTIONS];
    for (int64_t d = 0; d < n_dirs; d++) {
        const uint8_t *p = data + 1 + d * DIRECTION_BYTES;
        mode[d] = (int8_t)(p[0] % 4) - 1;
        mss[d] = u16(p + 1);
        id_pp[d] = p[3] & 1;
        sack[d] = (uint8_t)((p[3] >> 1) % 4); /* 3: out of the enum's range too */
    }
    size_t rows = (size_t)(n > 0 ? n : 1);
    int32_t *direction = malloc(rows * 4);
    int64_t *ts = malloc(rows * 8);
    uint32_t *seq = malloc(rows * 4), *ack = malloc(rows * 4), *plen = malloc(rows * 4), *ipid = malloc(rows * 4);
    uint16_t *flags = malloc(rows * 2), *win = malloc(rows * 2);
    uint8_t *dflags = malloc(rows), *ttl = malloc(rows), *has_ts = malloc(rows), *sack_n = malloc(rows);
    uint32_t *tsval = malloc(rows * 4), *tsecr = malloc(rows * 4);
    uint32_t *sack_l = malloc(rows * 4 * TRUTH_MAX_SACK), *sack_r = malloc(rows * 4 * TRUTH_MAX_SACK);
    int64_t now = 1000000000LL;
    for (int64_t i = 0; i < n; i++, row += ROW_BYTES) {
        direction[i] = (int8_t)row[0];           /* -128..127: some out of range */
        int32_t step_us = (int16_t)u16(row + 1); /* mostly forward, sometimes back */
        now += (int64_t)step_us * 1000;
        if (now < 0) now = 0;
        if (now >= TS_LIMIT_NS) now = TS_LIMIT_NS - 1;
        ts[i] = now;
        seq[i] = u32(row + 3);
        ack[i] = u32(row + 7);
        flags[i] = (uint16_t)(row[11] | (row[12] & 1) << 8);
        /* no payload, one whole segment of its direction's MSS (most data on the wire: a
         * super-segment in a direction makes it skip the no-SACK tail at the close), or any size
         * up to a jumbo frame */
        uint32_t any_len = u16(row + 13) % 9000u;
        uint32_t segment_len =
            direction[i] >= 0 && direction[i] < n_dirs ? (uint32_t)(mss[direction[i]] % 9000) : any_len;
        plen[i] = row[15] & 1 ? (row[15] & 2 ? segment_len : any_len) : 0u;
        win[i] = u16(row + 16);
        ipid[i] = u16(row + 18);
        dflags[i] = row[20];
        ttl[i] = row[21];
        has_ts[i] = row[22] & 1;
        tsval[i] = u32(row + 23);
        tsecr[i] = u32(row + 27);
        sack_n[i] = row[31] % (TRUTH_MAX_SACK + 2); /* above the maximum too */
        for (int j = 0; j < TRUTH_MAX_SACK; j++) {
            uint32_t base = ack[i] + (uint32_t)(int8_t)row[32 + j] * 1448u;
            sack_l[i * TRUTH_MAX_SACK + j] = base;
            sack_r[i * TRUTH_MAX_SACK + j] = base + (uint32_t)(int8_t)row[36 + j] * 724u;
        }
        (void)u32(row + 40); /* spare: keeps rows aligned */
    }
    truth_input in = {
        .n_packets = n,
        .n_directions = n_dirs,
        .direction = direction,
        .ts_ns = ts,
        .seq = seq,
        .ack = ack,
        .tcp_flags = flags,
        .payload_len = plen,
        .window = win,
        .ip_id = ipid,
        .decode_flags = dflags,
        .ttl = ttl,
        .has_ts = has_ts,
        .tsval = tsval,
        .tsecr = tsecr,
        .sack_count = sack_n,
        .sack_left = sack_l,
        .sack_right = sack_r,
        .mode = mode,
        .mss = mss,
        .id_per_packet = id_pp,
        .sack_negotiated = sack,
    };
    truth_output out = {
        .kind = malloc(rows),
        .rtt_us = malloc(rows * 8),
        .rtt_direction = malloc(rows * 4),
        .in_flight = malloc(rows * 8),
        .id64 = malloc(rows * 8),
        .hole_age_ns = malloc(rows * 8),
        .lost_repairs = malloc(rows * 4),
        .stats = malloc((size_t)n_dirs * S_N_FIELDS * 8),
    };
    if (truth_analyze(&in, &out) == 0) {
        for (int64_t i = 0; i < n; i++) {
            if (out.kind[i] > TRUTH_KIND_WINDOW_PROBE) abort();
            if (out.rtt_direction[i] >= n_dirs) abort();
            if (out.hole_age_ns[i] < -1) abort();
            if (out.lost_repairs[i] < 0) abort();
        }
        for (int64_t d = 0; d < n_dirs; d++) {
            const int64_t *S = out.stats + d * S_N_FIELDS;
            /* the evidence pass counts repeats without sub-typing them */
            int typed = mode[d] != TRUTH_MODE_EVIDENCE;
            if (S[S_DATA_PACKETS] > S[S_PACKETS] ||
                (typed &&
                 S[S_RETRANS_FAST] + S[S_RETRANS_RTO] + S[S_RETRANS_TLP] + S[S_RETRANS_OTHER] != S[S_RETRANS]) ||
                S[S_UNFILLED_HOLE_BYTES] < 0)
                abort();
            /* a tail at the close: senders without SACK only, its losses among its copies */
            int tail_allowed = mode[d] == TRUTH_MODE_SENDER && sack[d] == TRUTH_SACK_OFF;
            if (S[S_TAIL_LOST_AT_CLOSE] < 0 || S[S_TAIL_LOST_AT_CLOSE] > S[S_TAIL_COPIES_AT_CLOSE] ||
                S[S_TAIL_NEEDED_SINCE_CLOSE] < 0 ||
                (!tail_allowed && (S[S_TAIL_COPIES_AT_CLOSE] | S[S_TAIL_LOST_AT_CLOSE] | S[S_TAIL_NEEDED_SINCE_CLOSE])))
                abort();
        }
    }
    free(direction);
    free(ts);
    free(seq);
    free(ack);
    free(plen);
    free(ipid);
    free(flags);
    free(win);
    free(dflags);
    free(ttl);
    free(has_ts);
    free(sack_n);
    free(tsval);
    free(tsecr);
    free(sack_l);
    free(sack_r);
    free(out.kind);
    free(out.rtt_us);
    free(out.rtt_direction);
    free(out.in_flight);
    free(out.id64);
    free(out.hole_age_ns);
    free(out.lost_repairs);
    free(out.stats);
    return 0;
}
