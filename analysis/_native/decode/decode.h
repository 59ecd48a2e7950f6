/*
 * decode.h -- a pure-C, resumable walker over capture files held in memory.
 *
 * The model: a capture file is a byte buffer (usually a memory map). The
 * caller opens it once (decode_open reads the file header and says which
 * format it is), then calls decode_walk repeatedly: each call starts at a
 * byte offset, decodes up to `max_packets` packet records into caller-owned
 * column arrays (the packet-table contract of analysis/columns.py, same
 * names, types and order), and says where to resume. A walk ends in one of
 * three ways: the buffer ends exactly at a record boundary (DECODE_END), a
 * record is cut short by the end of the buffer (DECODE_CUT: every complete
 * record before it was decoded, `cut_offset` is where the cut record starts),
 * or the file is damaged (DECODE_ERROR: `error_offset` and `error_message`).
 *
 * No Python here: the same code runs under libFuzzer (fuzz/fuzz_decode.c).
 * Every read is bounds-checked against the buffer and against the record's
 * captured length; every loop is bounded by a length that only decreases or
 * by a small constant.
 */
#ifndef SPLINE_DECODE_H
#define SPLINE_DECODE_H

#include <stddef.h>
#include <stdint.h>

/* Must match analysis/columns.py. */
#define DECODE_MAX_SACK_BLOCKS 4

#define DECODE_FLAG_TRUNCATED         0x01
#define DECODE_FLAG_IP_FRAGMENT       0x02
#define DECODE_FLAG_IN_ICMP_ERROR     0x04
#define DECODE_FLAG_IP_OPTIONS        0x08
#define DECODE_FLAG_MALFORMED         0x10
#define DECODE_FLAG_UNSUPPORTED_LINK  0x20
#define DECODE_FLAG_IP_ID_VALID       0x40
#define DECODE_FLAG_IP_MORE_FRAGMENTS 0x80

/* The IP ECN codepoint (RFC 3168): the low 2 bits of the IPv4 TOS / IPv6 traffic class. */
#define DECODE_ECN_MASK    0x03u
#define DECODE_ECN_NOT_ECT 0u
#define DECODE_ECN_ECT1    1u
#define DECODE_ECN_ECT0    2u
#define DECODE_ECN_CE      3u

/* Linux cooked v1 frames carry no interface, only a packet type: their `interface` is
 * this base, plus one for frames going out (packet type 4), so that the copy of a packet
 * seen arriving and the copy seen leaving differ. Linux cooked v2 frames: the ifindex. */
#define DECODE_INTERFACE_SLL_BASE 0xFF00u
#define SLL_PACKET_OUTGOING       4

/* Interfaces a pcapng file may define over all its sections (the packet
 * table stores the interface index as uint16). */
#define DECODE_MAX_INTERFACES       4096
#define DECODE_INTERFACE_NAME_BYTES 64

enum decode_format { DECODE_FORMAT_UNKNOWN = 0, DECODE_FORMAT_PCAP = 1, DECODE_FORMAT_PCAPNG = 2 };

enum decode_status {
    DECODE_MORE = 0,  /* max_packets decoded; call again from next_offset */
    DECODE_END = 1,   /* buffer ended at a record boundary */
    DECODE_CUT = 2,   /* a record is cut short at cut_offset */
    DECODE_ERROR = 3, /* damaged file at error_offset */
};

/* One column array per field of the packet table, each with room for the
 * number of rows the caller asks for. */
typedef struct decode_columns {
    int64_t *ts_ns;
    uint32_t *frame_len;
    uint32_t *cap_len;
    uint16_t *interface;
    uint16_t *link_type;
    uint8_t *decode_flags;
    uint8_t *ip_version;
    uint8_t (*src_addr)[16];
    uint8_t (*dst_addr)[16];
    uint32_t *ip_id;
    uint8_t *ttl;
    uint8_t *ip_proto;
    uint32_t *ip_payload_len;
    uint16_t *sport;
    uint16_t *dport;
    uint32_t *seq;
    uint32_t *ack;
    uint16_t *tcp_flags;
    uint16_t *window;
    uint8_t *tcp_header_len;
    uint32_t *tcp_payload_len;
    uint16_t *opt_mss;
    int8_t *opt_wscale;
    uint8_t *opt_sack_permitted;
    uint8_t *opt_has_ts;
    uint32_t *opt_tsval;
    uint32_t *opt_tsecr;
    uint8_t *sack_count;
    uint32_t (*sack_left)[DECODE_MAX_SACK_BLOCKS];
    uint32_t (*sack_right)[DECODE_MAX_SACK_BLOCKS];
    uint16_t *ip_frag_offset;
    uint8_t *ts_valid;
    uint16_t *opt_mptcp; /* MPTCP option subtypes present: bit 1 << subtype */
    uint8_t *ip_ecn;     /* IP ECN codepoint (DECODE_ECN_*) */
} decode_columns;

typedef struct decode_interface {
    uint16_t link_type;
    uint32_t snaplen;                       /* bytes; 0 = not limited */
    uint8_t tsresol;                        /* pcapng if_tsresol code: bit 7 set = 2^-n s, else 10^-n s */
    int64_t tsoffset_s;                     /* pcapng if_tsoffset, seconds */
    char name[DECODE_INTERFACE_NAME_BYTES]; /* NUL-terminated, may be empty */
    uint8_t has_ifdrop, has_osdrop;         /* from the interface's last ISB */
    uint64_t isb_ifdrop;                    /* packets */
    uint64_t isb_osdrop;                    /* packets */
    uint32_t isb_count;
} decode_interface;

/* The last ISB seen for each section-local interface id, over the whole
 * file: the rule of the tshark oracle (make_oracle.sh), where interface 0
 * of a later section replaces interface 0 of an earlier one. */
typedef struct decode_isb_by_local_id {
    uint8_t seen, has_ifdrop, has_osdrop;
    uint64_t isb_ifdrop, isb_osdrop; /* packets */
} decode_isb_by_local_id;

typedef struct decode_state {
    int format;                        /* enum decode_format */
    int big_endian;                    /* current file (pcap) or section (pcapng) byte order */
    int ts_nanoseconds;                /* pcap: fractional field counts ns, else us */
    uint32_t pcap_record_header_bytes; /* 16, or 24 for the "modified" (Kuznetzov) format */
    uint32_t section_first_interface;  /* pcapng: global index of the section's interface 0 */
    uint32_t section_count;
    uint32_t interface_count;
    uint64_t nonpacket_records;
    int64_t last_ts_ns; /* timestamp of the last record that had one (for SPBs) */ /* pcapng records tshark shows as
                                                                                      frames without packet data */
    uint64_t error_offset;
    uint64_t cut_offset;
    char error_message[160];
    decode_interface interfaces[DECODE_MAX_INTERFACES];
    decode_isb_by_local_id isb_by_local_id[DECODE_MAX_INTERFACES];
} decode_state;

/* Read the file header. Returns DECODE_MORE with *first_record_offset set,
 * DECODE_CUT (file shorter than its header) or DECODE_ERROR. */
int decode_open(decode_state *st, const uint8_t *buf, size_t len, size_t *first_record_offset);

/* Decode records from `offset` into rows [0, max_packets) of `cols`
 * (cols == NULL: only count the records and validate the file, writing nothing).
 * *rows_out = rows written; *next_offset = where to resume (for DECODE_MORE
 * and DECODE_END), or the offset of the cut record / error. */
int decode_walk(decode_state *st, const uint8_t *buf, size_t len, size_t offset, const decode_columns *cols,
                size_t max_packets, size_t *rows_out, size_t *next_offset);

/* Decode one link-layer frame into row `row` of `cols` (frame columns
 * ts_ns/frame_len/cap_len/interface/link_type must be set by the caller or
 * are set here from the arguments). Exposed for tests and the fuzzer. */
void decode_frame(const uint8_t *frame, uint32_t cap_len, uint32_t frame_len, uint16_t link_type,
                  const decode_columns *cols, size_t row);

#endif
