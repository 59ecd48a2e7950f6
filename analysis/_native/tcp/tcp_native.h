/* tcp_native.h -- shared declarations of the TCP passes (streams, Wireshark-compatible analysis).
 *
 * The packet table arrives as plain C arrays (one per column, row = frame). Both passes run
 * once over the frames in file order and write per-frame and per-stream outputs into buffers
 * the caller allocated. No Python objects are touched here: module.c does the glue.
 */
#ifndef SPLINE_TCP_NATIVE_H
#define SPLINE_TCP_NATIVE_H

#include <stdint.h>
#include <stddef.h>

/* TCP header flag bits as in columns.py (flag byte, NS as bit 8). */
#define TH_FIN 0x001
#define TH_SYN 0x002
#define TH_RST 0x004
#define TH_PSH 0x008
#define TH_ACK 0x010

/* decode_flags bits as in columns.py. */
#define DECODE_TRUNCATED     0x01
#define DECODE_IP_FRAGMENT   0x02
#define DECODE_IN_ICMP_ERROR 0x04

/* Sequence comparisons modulo 2^32 (RFC 1982 style), as Wireshark's GT_SEQ etc. */
#define SEQ_GT(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)) > 0)
#define SEQ_LT(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)) < 0)
#define SEQ_LE(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)) <= 0)

/* Input columns shared by both passes. Arrays have n_frames rows; addresses are 16 bytes. */
typedef struct {
    size_t n_frames;
    const int64_t *ts_ns;
    const uint8_t *decode_flags;
    const uint8_t *src_addr; /* n_frames x 16 */
    const uint8_t *dst_addr; /* n_frames x 16 */
    const uint16_t *sport;
    const uint16_t *dport;
    const uint32_t *seq;
    const uint32_t *ack;
    const uint16_t *tcp_flags;
    const uint16_t *window;        /* raw, unscaled */
    const uint8_t *tcp_header_len; /* 0 = no TCP header */
    const uint32_t *tcp_payload_len;
    const uint16_t *opt_mss;  /* 0 = absent */
    const int8_t *opt_wscale; /* -1 = absent */
    const uint8_t *opt_sack_permitted;
    const uint8_t *opt_has_ts;
    const uint8_t *sack_count;
    const uint32_t *sack_left;  /* n_frames x 4 */
    const uint32_t *sack_right; /* n_frames x 4 */
    const uint16_t *opt_mptcp;  /* MPTCP subtypes present, bit 1 << subtype */
} tcp_packets_t;

/* Per-stream outputs of the streams pass (arrays grown by the pass; caller frees with free()). */
typedef struct {
    size_t count;
    size_t capacity;
    uint8_t *a_addr, *b_addr; /* count x 16 */
    uint16_t *a_port, *b_port;
    int64_t *first_frame, *last_frame;
    int64_t *packets;       /* count x 2: a->b, b->a */
    int64_t *payload_bytes; /* count x 2 */
    uint8_t *syn_seen;
    int8_t *window_scale;    /* count x 2: shift, -1 unknown */
    int32_t *mss;            /* count x 2: bytes, -1 unknown */
    uint8_t *sack_permitted; /* count x 2 */
    uint8_t *timestamps;     /* count x 2 */
} tcp_streams_t;

/* Per-frame outputs of the streams pass. */
typedef struct {
    int32_t *stream;       /* tcp.stream; -1 no TCP or inside an ICMP error */
    int32_t *conversation; /* like stream, but also set for TCP quoted in ICMP errors */
    uint8_t *direction;    /* 0 = a->b, 1 = b->a (also set for ICMP-quoted TCP) */
    int64_t *seq64;        /* unwrapped per direction, -1 n/a */
    int64_t *ack64;        /* unwrapped into the peer's sequence space, -1 n/a */
} tcp_frame_streams_t;

/* Returns 0 on success, -1 on allocation failure. */
int tcp_assign_streams(const tcp_packets_t *pk, tcp_frame_streams_t *out, tcp_streams_t *streams);
void tcp_streams_free(tcp_streams_t *streams);

/* Bits of the per-frame analysis mask (wireshark.py mirrors these). */
#define WS_RETRANSMISSION          (1u << 0)
#define WS_FAST_RETRANSMISSION     (1u << 1)
#define WS_SPURIOUS_RETRANSMISSION (1u << 2)
#define WS_OUT_OF_ORDER            (1u << 3)
#define WS_LOST_SEGMENT            (1u << 4)
#define WS_ACK_LOST_SEGMENT        (1u << 5)
#define WS_DUPLICATE_ACK           (1u << 6)
#define WS_ZERO_WINDOW             (1u << 7)
#define WS_ZERO_WINDOW_PROBE       (1u << 8)
#define WS_ZERO_WINDOW_PROBE_ACK   (1u << 9)
#define WS_KEEP_ALIVE              (1u << 10)
#define WS_KEEP_ALIVE_ACK          (1u << 11)
#define WS_WINDOW_UPDATE           (1u << 12)
#define WS_WINDOW_FULL             (1u << 13)
#define WS_REUSED_PORTS            (1u << 14)

typedef struct {
    uint32_t *flags;          /* WS_* per frame */
    int64_t *ack_rtt_ns;      /* -1 when tshark shows no tcp.analysis.ack_rtt */
    int64_t *acked_frame;     /* 0-based frame this ACK acknowledges, -1 none */
    int64_t *bytes_in_flight; /* -1 when tshark shows no tcp.analysis.bytes_in_flight */
    int32_t *dupack_num;      /* tcp.analysis.duplicate_ack_num, 0 none */
} tcp_analysis_out_t;

/* Runs Wireshark 4.0's per-frame sequence analysis. conversation/direction come from the
 * streams pass; n_conversations = streams->count. Returns 0, or -1 on allocation failure. */
int tcp_wireshark_analyze(const tcp_packets_t *pk, const int32_t *conversation, const uint8_t *direction,
                          size_t n_conversations, tcp_analysis_out_t *out);

#endif
