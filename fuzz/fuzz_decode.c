/*
 * fuzz_decode.c -- libFuzzer entry for the pure-C capture walker.
 *
 * Each input is a whole capture file. We open it and walk it to the end in
 * small chunks (7 rows: odd, so chunk boundaries land everywhere), exactly
 * as the Python reader does, into heap columns sized for one chunk, so
 * AddressSanitizer catches any write past a chunk and any read past the
 * input. The walk must end (END, CUT or ERROR) within a bounded number of
 * calls: every call either decodes rows or ends, so more calls than input
 * bytes would mean a hang.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

#define ROWS_PER_CHUNK 7

static decode_state state; /* ~400 KB: static, not on the stack */

static void *column(size_t bytes_per_row) { return malloc(bytes_per_row * ROWS_PER_CHUNK); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    decode_columns cols = {
        .ts_ns = column(8),
        .frame_len = column(4),
        .cap_len = column(4),
        .interface = column(2),
        .link_type = column(2),
        .decode_flags = column(1),
        .ip_version = column(1),
        .src_addr = column(16),
        .dst_addr = column(16),
        .ip_id = column(4),
        .ttl = column(1),
        .ip_proto = column(1),
        .ip_payload_len = column(4),
        .sport = column(2),
        .dport = column(2),
        .seq = column(4),
        .ack = column(4),
        .tcp_flags = column(2),
        .window = column(2),
        .tcp_header_len = column(1),
        .tcp_payload_len = column(4),
        .opt_mss = column(2),
        .opt_wscale = column(1),
        .opt_sack_permitted = column(1),
        .opt_has_ts = column(1),
        .opt_tsval = column(4),
        .opt_tsecr = column(4),
        .sack_count = column(1),
        .sack_left = column(4 * DECODE_MAX_SACK_BLOCKS),
        .sack_right = column(4 * DECODE_MAX_SACK_BLOCKS),
        .ip_frag_offset = column(2),
        .ts_valid = column(1),
        .opt_mptcp = column(2),
        .ip_ecn = column(1),
    };
    size_t offset = 0, counted_rows = 0, count_end = 0;
    /* Pass 1 as the Python reader does it: count only (no columns). */
    if (decode_open(&state, data, size, &offset) == DECODE_MORE)
        decode_walk(&state, data, size, offset, NULL, SIZE_MAX, &counted_rows, &count_end);
    /* Pass 2: decode in small chunks; it must find exactly as many records. */
    int status = decode_open(&state, data, size, &offset);
    size_t calls = 0, decoded_rows = 0;
    while (status == DECODE_MORE) {
        size_t rows = 0, next = 0;
        status = decode_walk(&state, data, size, offset, &cols, ROWS_PER_CHUNK, &rows, &next);
        if (status == DECODE_MORE && next <= offset) abort(); /* no progress: would loop forever */
        decoded_rows += rows;
        offset = next;
        if (++calls > size + 2) abort();
    }
    if (decoded_rows != counted_rows) abort(); /* the two passes must agree */
    /* Also feed the raw input to the frame decoder under every link type we know. */
    static const uint16_t link_types[] = {0, 1, 9, 10, 12, 14, 50, 101, 104, 105, 108, 113, 127, 228, 229, 276, 147};
    for (size_t k = 0; k < sizeof link_types / sizeof link_types[0]; k++) {
        uint32_t cap = size > 65535 ? 65535 : (uint32_t)size;
        decode_frame(data, cap, cap + (uint32_t)(size & 0xff), link_types[k], &cols, k % ROWS_PER_CHUNK);
    }
    void **pointers = (void **)&cols;
    for (size_t k = 0; k < sizeof cols / sizeof(void *); k++) free(pointers[k]);
    return 0;
}
