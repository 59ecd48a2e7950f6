/*
 * file.c -- the file layer: walk classic pcap (magic a1b2c3d4 = microseconds,
 * a1b23c4d = nanoseconds, a1b2cd34 = "modified" 24-byte record headers; either
 * byte order) and pcapng (blocks SHB, IDB, EPB, SPB, obsolete PB, ISB; each
 * section with its own byte order and interfaces; unknown blocks skipped).
 * Produces frames (timestamp, captured bytes, wire length, link type) and hands
 * each to the frame layer (frame.c, decode_frame).
 */
#include "decode.h"

#include <stdio.h>
#include <string.h>

#include "byte_order.h"

/* Largest captured length of one classic-pcap record, bytes (libpcap's and
 * Wireshark's limit for ordinary link types). Larger = damaged file. */
#define PCAP_MAX_RECORD_BYTES 262144u
/* Largest pcapng block we accept, bytes (Wireshark's limit); larger = damaged. */
#define PCAPNG_MAX_BLOCK_BYTES  (16u * 1024u * 1024u)
#define PCAPNG_SHB_MAGIC        0x0A0D0D0Au
#define PCAPNG_BYTE_ORDER_MAGIC 0x1A2B3C4Du
#define NS_PER_S                1000000000ull
#define NS_PER_US               1000ull

static inline uint16_t file16(const decode_state *st, const uint8_t *p) { return st->big_endian ? be16(p) : le16(p); }
static inline uint32_t file32(const decode_state *st, const uint8_t *p) { return st->big_endian ? be32(p) : le32(p); }
static inline uint64_t file64(const decode_state *st, const uint8_t *p) {
    uint64_t a = file32(st, p), b = file32(st, p + 4);
    /* pcapng stores 64-bit option values in the section's byte order. */
    return st->big_endian ? ((a << 32) | b) : ((b << 32) | a);
}

static int fail(decode_state *st, uint64_t offset, const char *message) {
    st->error_offset = offset;
    snprintf(st->error_message, sizeof st->error_message, "%s", message);
    return DECODE_ERROR;
}

/* ---------------------------------------------------------------- classic pcap */

static int pcap_open(decode_state *st, const uint8_t *buf, size_t len, size_t *first) {
    uint32_t magic = le32(buf);
    st->pcap_record_header_bytes = 16;
    switch (magic) {
    case 0xa1b2c3d4:
        st->big_endian = 0;
        st->ts_nanoseconds = 0;
        break;
    case 0xd4c3b2a1:
        st->big_endian = 1;
        st->ts_nanoseconds = 0;
        break;
    case 0xa1b23c4d:
        st->big_endian = 0;
        st->ts_nanoseconds = 1;
        break;
    case 0x4d3cb2a1:
        st->big_endian = 1;
        st->ts_nanoseconds = 1;
        break;
    case 0xa1b2cd34:
        st->big_endian = 0;
        st->ts_nanoseconds = 0;
        st->pcap_record_header_bytes = 24;
        break;
    case 0x34cdb2a1:
        st->big_endian = 1;
        st->ts_nanoseconds = 0;
        st->pcap_record_header_bytes = 24;
        break;
    default:
        return fail(st, 0, "not a capture file (unknown magic number)");
    }
    if (len < 24) {
        st->cut_offset = 0;
        return DECODE_CUT;
    }
    uint16_t major = file16(st, buf + 4), minor = file16(st, buf + 6);
    if (major != 2 || minor > 4) {
        char message[96];
        snprintf(message, sizeof message, "unsupported pcap version %u.%u", major, minor);
        return fail(st, 4, message);
    }
    st->format = DECODE_FORMAT_PCAP;
    decode_interface *ifc = &st->interfaces[0];
    memset(ifc, 0, sizeof *ifc);
    ifc->snaplen = file32(st, buf + 16);
    ifc->link_type = (uint16_t)(file32(st, buf + 20) & 0xffff);
    ifc->tsresol = st->ts_nanoseconds ? 9 : 6;
    st->interface_count = 1;
    *first = 24;
    return DECODE_MORE;
}

static int pcap_walk(decode_state *st, const uint8_t *buf, size_t len, size_t off, const decode_columns *cols,
                     size_t max, size_t *rows, size_t *next) {
    size_t n = 0;
    const uint32_t hl = st->pcap_record_header_bytes;
    const uint16_t link_type = st->interfaces[0].link_type;
    int status = DECODE_MORE;
    while (n < max) {
        if (off == len) {
            status = DECODE_END;
            break;
        }
        if (len - off < hl) {
            st->cut_offset = off;
            status = DECODE_CUT;
            break;
        }
        const uint8_t *h = buf + off;
        uint32_t ts_s = file32(st, h), ts_frac = file32(st, h + 4);
        uint32_t incl = file32(st, h + 8), orig = file32(st, h + 12);
        if (incl > PCAP_MAX_RECORD_BYTES) {
            char message[128];
            snprintf(message, sizeof message, "damaged record header (captured length %u bytes exceeds %u)", incl,
                     PCAP_MAX_RECORD_BYTES);
            *rows = n;
            *next = off;
            return fail(st, off, message);
        }
        if (len - off - hl < incl) {
            st->cut_offset = off;
            status = DECODE_CUT;
            break;
        }
        if (cols) {
            cols->ts_ns[n] =
                (int64_t)((uint64_t)ts_s * NS_PER_S + (uint64_t)ts_frac * (st->ts_nanoseconds ? 1 : NS_PER_US));
            cols->ts_valid[n] = 1;
            cols->interface[n] = 0;
            decode_frame(h + hl, incl, orig, link_type, cols, n);
        }
        n++;
        off += hl + incl;
    }
    *rows = n;
    *next = off;
    return status;
}

/* ---------------------------------------------------------------- pcapng */

/* pcapng timestamp units -> ns. if_tsresol: bit 7 clear = 10^-n s, set = 2^-n s. */
static int64_t pcapng_ticks_to_ns(uint64_t ticks, const decode_interface *ifc) {
    uint8_t code = ifc->tsresol;
    unsigned n = code & 0x7f;
    uint64_t ns;
    static const uint64_t pow10[20] = {1ull,
                                       10ull,
                                       100ull,
                                       1000ull,
                                       10000ull,
                                       100000ull,
                                       1000000ull,
                                       10000000ull,
                                       100000000ull,
                                       1000000000ull,
                                       10000000000ull,
                                       100000000000ull,
                                       1000000000000ull,
                                       10000000000000ull,
                                       100000000000000ull,
                                       1000000000000000ull,
                                       10000000000000000ull,
                                       100000000000000000ull,
                                       1000000000000000000ull,
                                       10000000000000000000ull};
    if (code & 0x80) {
        if (n >= 64) {
            ns = 0; /* every tick is < 2^-64 s */
        } else {
            uint64_t seconds = n ? ticks >> n : ticks;
            uint64_t fraction = n ? ticks & ((1ull << n) - 1) : 0;
            /* fraction / 2^n seconds; keep 32 significant bits so fraction * 1e9 fits in 64 bits */
            if (n > 32) {
                fraction >>= (n - 32);
                n = 32;
            }
            ns = seconds * NS_PER_S + ((fraction * NS_PER_S) >> n);
        }
    } else if (n <= 9) {
        ns = ticks * pow10[9 - n];
    } else if (n - 9 < 20) {
        ns = ticks / pow10[n - 9];
    } else {
        ns = 0;
    }
    return (int64_t)(ns + (uint64_t)ifc->tsoffset_s * NS_PER_S);
}

/* Walk the options of a block between [p, end): calls back per option. */
typedef void (*option_fn)(decode_state *st, decode_interface *ifc, uint16_t code, const uint8_t *value,
                          uint16_t length);

static void pcapng_options(decode_state *st, decode_interface *ifc, const uint8_t *p, const uint8_t *end,
                           option_fn fn) {
    while (end - p >= 4) {
        uint16_t code = file16(st, p), length = file16(st, p + 2);
        if (code == 0) break;
        size_t padded = ((size_t)length + 3u) & ~(size_t)3u;
        if ((size_t)(end - p - 4) < length) break; /* option runs past its block: ignore the rest */
        fn(st, ifc, code, p + 4, length);
        if ((size_t)(end - p - 4) < padded) break;
        p += 4 + padded;
    }
}

static void idb_option(decode_state *st, decode_interface *ifc, uint16_t code, const uint8_t *v, uint16_t length) {
    if (code == 2 && length > 0) { /* if_name */
        size_t n = length < DECODE_INTERFACE_NAME_BYTES - 1 ? length : DECODE_INTERFACE_NAME_BYTES - 1;
        memcpy(ifc->name, v, n);
        ifc->name[n] = 0;
    } else if (code == 9 && length >= 1) { /* if_tsresol */
        ifc->tsresol = v[0];
    } else if (code == 14 && length == 8) { /* if_tsoffset, seconds */
        ifc->tsoffset_s = (int64_t)file64(st, v);
    }
}

static void isb_option(decode_state *st, decode_interface *ifc, uint16_t code, const uint8_t *v, uint16_t length) {
    if (code == 5 && length == 8) {
        ifc->has_ifdrop = 1;
        ifc->isb_ifdrop = file64(st, v);
    } else if (code == 7 && length == 8) {
        ifc->has_osdrop = 1;
        ifc->isb_osdrop = file64(st, v);
    }
}

static int pcapng_section_header(decode_state *st, const uint8_t *buf, size_t len, size_t off, uint32_t *block_len) {
    if (len - off < 12) {
        st->cut_offset = off;
        return DECODE_CUT;
    }
    uint32_t bom = le32(buf + off + 8);
    if (bom == PCAPNG_BYTE_ORDER_MAGIC)
        st->big_endian = 0;
    else if (bom == 0x4D3C2B1Au)
        st->big_endian = 1;
    else
        return fail(st, off + 8, "damaged section header block (bad byte-order magic)");
    *block_len = file32(st, buf + off + 4);
    return DECODE_MORE;
}

static int pcapng_open(decode_state *st, const uint8_t *buf, size_t len, size_t *first) {
    uint32_t block_len;
    int status = pcapng_section_header(st, buf, len, 0, &block_len);
    if (status != DECODE_MORE) return status;
    st->format = DECODE_FORMAT_PCAPNG;
    *first = 0; /* the walk reads the first SHB like any other */
    return DECODE_MORE;
}

static decode_interface *pcapng_interface(decode_state *st, uint32_t local_id) {
    uint64_t global = (uint64_t)st->section_first_interface + local_id;
    if (global >= st->interface_count) return NULL;
    return &st->interfaces[global];
}

static int pcapng_walk(decode_state *st, const uint8_t *buf, size_t len, size_t off, const decode_columns *cols,
                       size_t max, size_t *rows, size_t *next) {
    size_t n = 0;
    int status = DECODE_MORE;
    char message[128];
    while (n < max) {
        if (off == len) {
            status = DECODE_END;
            break;
        }
        if (len - off < 8) {
            st->cut_offset = off;
            status = DECODE_CUT;
            break;
        }
        uint32_t type = file32(st, buf + off);
        if (le32(buf + off) == PCAPNG_SHB_MAGIC) type = PCAPNG_SHB_MAGIC; /* palindromic: any byte order */
        uint32_t block_len;
        if (type == PCAPNG_SHB_MAGIC) {
            int s = pcapng_section_header(st, buf, len, off, &block_len);
            if (s != DECODE_MORE) {
                status = s;
                break;
            }
        } else {
            block_len = file32(st, buf + off + 4);
        }
        if (block_len < 12 || block_len % 4 != 0 || block_len > PCAPNG_MAX_BLOCK_BYTES) {
            snprintf(message, sizeof message, "damaged block header (block type 0x%08x, total length %u)", type,
                     block_len);
            status = fail(st, off, message);
            break;
        }
        if (len - off < block_len) {
            st->cut_offset = off;
            status = DECODE_CUT;
            break;
        }
        const uint8_t *b = buf + off;
        if (file32(st, b + block_len - 4) != block_len) {
            snprintf(message, sizeof message, "damaged block (block type 0x%08x: trailing length %u != %u)", type,
                     file32(st, b + block_len - 4), block_len);
            status = fail(st, off, message);
            break;
        }
        const uint8_t *block_end = b + block_len - 4; /* before the trailing length */
        switch (type) {
        case PCAPNG_SHB_MAGIC: {
            if (block_len < 28) {
                status = fail(st, off, "damaged section header block (too short)");
                goto out;
            }
            uint16_t major = file16(st, b + 12), minor = file16(st, b + 14);
            if (major != 1 || minor > 2) {
                snprintf(message, sizeof message, "unsupported pcapng version %u.%u", major, minor);
                status = fail(st, off + 12, message);
                goto out;
            }
            st->section_first_interface = st->interface_count;
            st->section_count++;
            break;
        }
        case 1: { /* Interface Description Block */
            if (block_len < 20) {
                status = fail(st, off, "damaged interface description block (too short)");
                goto out;
            }
            if (st->interface_count >= DECODE_MAX_INTERFACES) {
                status = fail(st, off, "too many interfaces (more than 4096)");
                goto out;
            }
            decode_interface *ifc = &st->interfaces[st->interface_count];
            memset(ifc, 0, sizeof *ifc);
            ifc->link_type = file16(st, b + 8);
            ifc->snaplen = file32(st, b + 12);
            ifc->tsresol = 6; /* default: microseconds */
            pcapng_options(st, ifc, b + 16, block_end, idb_option);
            st->interface_count++;
            break;
        }
        case 6:
        case 2: { /* Enhanced Packet Block; obsolete Packet Block */
            if (block_len < 32) {
                status = fail(st, off, "damaged packet block (too short)");
                goto out;
            }
            uint32_t local = type == 6 ? file32(st, b + 8) : file16(st, b + 8);
            decode_interface *ifc = pcapng_interface(st, local);
            if (!ifc) {
                snprintf(message, sizeof message, "packet block names interface %u, which the section does not define",
                         local);
                status = fail(st, off, message);
                goto out;
            }
            uint32_t incl = file32(st, b + 20), orig = file32(st, b + 24);
            if (incl > block_len - 32) {
                snprintf(message, sizeof message, "damaged packet block (captured length %u exceeds block)", incl);
                status = fail(st, off, message);
                goto out;
            }
            uint64_t ticks = ((uint64_t)file32(st, b + 12) << 32) | file32(st, b + 16);
            if (cols) {
                cols->ts_ns[n] = st->last_ts_ns = pcapng_ticks_to_ns(ticks, ifc);
                cols->ts_valid[n] = 1;
                cols->interface[n] = (uint16_t)(ifc - st->interfaces);
                decode_frame(b + 28, incl, orig, ifc->link_type, cols, n);
            }
            n++;
            break;
        }
        case 3: { /* Simple Packet Block: interface 0 of the section, no timestamp */
            if (block_len < 16) {
                status = fail(st, off, "damaged simple packet block (too short)");
                goto out;
            }
            decode_interface *ifc = pcapng_interface(st, 0);
            if (!ifc) {
                status = fail(st, off, "simple packet block before any interface description");
                goto out;
            }
            uint32_t orig = file32(st, b + 8);
            uint32_t incl = block_len - 16;
            if (orig < incl) incl = orig;
            if (ifc->snaplen && ifc->snaplen < incl) incl = ifc->snaplen;
            if (cols) {
                cols->ts_ns[n] = st->last_ts_ns;
                cols->ts_valid[n] = 0;
                cols->interface[n] = (uint16_t)(ifc - st->interfaces);
                decode_frame(b + 12, incl, orig, ifc->link_type, cols, n);
            }
            n++;
            break;
        }
        case 5: { /* Interface Statistics Block: the last one per interface holds the totals */
            if (block_len < 24) {
                status = fail(st, off, "damaged interface statistics block (too short)");
                goto out;
            }
            uint32_t local = file32(st, b + 8);
            decode_interface scratch;
            memset(&scratch, 0, sizeof scratch);
            pcapng_options(st, &scratch, b + 20, block_end, isb_option);
            if (local < DECODE_MAX_INTERFACES) {
                decode_isb_by_local_id *last = &st->isb_by_local_id[local];
                last->seen = 1;
                last->has_ifdrop = scratch.has_ifdrop;
                last->has_osdrop = scratch.has_osdrop;
                last->isb_ifdrop = scratch.isb_ifdrop;
                last->isb_osdrop = scratch.isb_osdrop;
            }
            decode_interface *ifc = pcapng_interface(st, local);
            if (!ifc) break; /* statistics of an undefined interface: nothing to attach them to */
            ifc->has_ifdrop = scratch.has_ifdrop;
            ifc->has_osdrop = scratch.has_osdrop;
            ifc->isb_ifdrop = scratch.isb_ifdrop;
            ifc->isb_osdrop = scratch.isb_osdrop;
            ifc->isb_count++;
            break;
        }
        case 9:
        case 0x00000BADu:
        case 0x40000BADu:
            /* systemd journal export, custom blocks: records without packet data (tshark counts them as frames) */
            st->nonpacket_records++;
            break;
        default:
            break; /* name resolution, decryption secrets, unknown: skip */
        }
        off += block_len;
    }
out:
    *rows = n;
    *next = (status == DECODE_CUT) ? st->cut_offset : (status == DECODE_ERROR ? st->error_offset : off);
    if (status == DECODE_MORE || status == DECODE_END) *next = off;
    return status;
}

/* ---------------------------------------------------------------- entry points */

int decode_open(decode_state *st, const uint8_t *buf, size_t len, size_t *first) {
    memset(st, 0, offsetof(decode_state, interfaces));
    memset(st->isb_by_local_id, 0, sizeof st->isb_by_local_id);
    st->interface_count = 0;
    *first = 0;
    if (len == 0) return fail(st, 0, "empty file");
    if (len < 4) return fail(st, 0, "not a capture file (shorter than any file header)");
    if (le32(buf) == PCAPNG_SHB_MAGIC) return pcapng_open(st, buf, len, first);
    return pcap_open(st, buf, len, first);
}

int decode_walk(decode_state *st, const uint8_t *buf, size_t len, size_t offset, const decode_columns *cols,
                size_t max_packets, size_t *rows_out, size_t *next_offset) {
    *rows_out = 0;
    *next_offset = offset;
    if (offset > len) return fail(st, offset, "offset beyond end of buffer");
    if (st->format == DECODE_FORMAT_PCAP)
        return pcap_walk(st, buf, len, offset, cols, max_packets, rows_out, next_offset);
    if (st->format == DECODE_FORMAT_PCAPNG)
        return pcapng_walk(st, buf, len, offset, cols, max_packets, rows_out, next_offset);
    return fail(st, 0, "decoder not opened");
}
