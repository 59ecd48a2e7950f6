/*
 * frame.c -- the frame layer: link header -> IPv4/IPv6 (+ extension headers,
 * tunnels) -> TCP (+ options) / UDP ports / ICMP error detection, one frame at
 * a time, into one row of the packet table (decode_frame in decode.h). The file
 * layer (file.c) finds the frames.
 *
 * Lengths follow Wireshark's rule: a layer's length on the wire is what the
 * header says, clipped to what is left of the frame's wire length
 * (`frame_len`, not the captured length), so a snaplen-96 capture measures
 * TCP payload exactly like the full capture would. Captured bytes only
 * decide which header fields we can read.
 *
 * IP fragments: a fragment with offset 0 carries the TCP header, which we
 * decode (flags DECODE_FLAG_IP_FRAGMENT and, if more follow,
 * DECODE_FLAG_IP_MORE_FRAGMENTS; tcp_payload_len counts this fragment's
 * bytes only); later fragments carry no transport header. Joining the
 * datagram's length (what tshark's default reassembly reports) is done by
 * the Python side, which sees all rows.
 */
#include "decode.h"

#include <string.h>

#include "byte_order.h"

/* Nested link/tunnel headers we follow (VLAN tags, MPLS labels, IP-in-IP). */
#define MAX_ENCAPSULATION_DEPTH    8
#define MAX_IPV6_EXTENSION_HEADERS 8

/* The decoded headers of one frame, stored into the columns at the end. */
typedef struct row {
    uint8_t flags, ip_version, ttl, ip_proto, tcp_header_len, sack_count, ecn;
    uint8_t src[16], dst[16];
    uint32_t ip_id, ip_payload_len, seq, ack, tcp_payload_len, tsval, tsecr;
    uint16_t sport, dport, tcp_flags, window, mss, frag_offset, mptcp;
    int8_t wscale;
    uint8_t sack_permitted, has_ts;
    uint32_t sack_left[DECODE_MAX_SACK_BLOCKS], sack_right[DECODE_MAX_SACK_BLOCKS];
} row;

static void decode_ethertype(uint16_t ethertype, const uint8_t *p, uint32_t cap, uint32_t wire, row *r, int depth);
static void decode_ip(const uint8_t *p, uint32_t cap, uint32_t wire, row *r, int depth);

static void map_ipv4(uint8_t out[16], const uint8_t *ipv4) {
    memset(out, 0, 10);
    out[10] = 0xff;
    out[11] = 0xff;
    memcpy(out + 12, ipv4, 4);
}

/* TCP options: kind 0 ends the list, kind 1 is one byte of padding, every
 * other kind has a length byte >= 2 covering kind and length. */
static void decode_tcp_options(const uint8_t *p, uint32_t n, row *r) {
    uint32_t i = 0;
    while (i < n) {
        uint8_t kind = p[i];
        if (kind == 0) break;
        if (kind == 1) {
            i++;
            continue;
        }
        if (i + 1 >= n) {
            r->flags |= DECODE_FLAG_TRUNCATED;
            break;
        }
        uint8_t len = p[i + 1];
        if (len < 2) {
            r->flags |= DECODE_FLAG_MALFORMED;
            break;
        }
        if (i + len > n) {
            /* A SACK option cut by the snaplen: tshark keeps the blocks it could read
             * before it hit the end of the capture. */
            if (kind == 5 && len >= 10 && (len - 2) % 8 == 0)
                for (uint32_t at = i + 2; at + 8 <= n && r->sack_count < DECODE_MAX_SACK_BLOCKS; at += 8) {
                    r->sack_left[r->sack_count] = be32(p + at);
                    r->sack_right[r->sack_count] = be32(p + at + 4);
                    r->sack_count++;
                }
            r->flags |= DECODE_FLAG_TRUNCATED;
            break;
        }
        const uint8_t *o = p + i;
        switch (kind) {
        case 2:
            if (len == 4) r->mss = be16(o + 2);
            break;
        case 3:
            if (len == 3) r->wscale = (int8_t)(o[2] > 14 ? 14 : o[2]);
            break; /* RFC 7323 caps the shift at 14 */
        case 4:
            if (len == 2) r->sack_permitted = 1;
            break;
        case 5:
            if (len >= 10 && (len - 2) % 8 == 0) {
                uint32_t blocks = (uint32_t)(len - 2) / 8;
                for (uint32_t b = 0; b < blocks && r->sack_count < DECODE_MAX_SACK_BLOCKS; b++) {
                    r->sack_left[r->sack_count] = be32(o + 2 + 8 * b);
                    r->sack_right[r->sack_count] = be32(o + 6 + 8 * b);
                    r->sack_count++;
                }
            }
            break;
        case 8:
            if (len == 10) {
                r->has_ts = 1;
                r->tsval = be32(o + 2);
                r->tsecr = be32(o + 6);
            }
            break;
        case 30: /* MPTCP (RFC 8684): the subtype is the high nibble of the third byte */
            if (len >= 3) r->mptcp |= (uint16_t)(1u << (o[2] >> 4));
            break;
        default:
            break;
        }
        i += len;
    }
}

/* `wire` = segment length on the wire (IP length minus IP headers, clipped
 * to the frame), `cap` = bytes of it captured (may run past `wire` into
 * link-layer padding, which is not part of the segment).
 *
 * What counts as a TCP packet follows tshark 4.0: once the fixed fields up
 * to the window (16 bytes) can be read, the frame is TCP and gets a stream,
 * even when the data offset is impossible. Then:
 *   data offset < 20 bytes  -> MALFORMED, payload = segment - data offset
 *                              (tshark's tcp.len for a "bogus header length")
 *   data offset > segment   -> MALFORMED, payload 0 (tshark: no tcp.len)
 * tshark skips its sequence analysis for both; later stages should skip
 * rows with DECODE_FLAG_MALFORMED too. A data offset of 0 cannot be told
 * from "no TCP header" (tcp_header_len 0) and is left out. */
static void decode_tcp(const uint8_t *p, uint32_t cap, uint32_t wire, row *r) {
    uint32_t readable = cap < wire ? cap : wire;
    if (readable >= 4) {
        r->sport = be16(p);
        r->dport = be16(p + 2);
    }
    if (readable < 16) {
        r->flags |= cap < wire ? DECODE_FLAG_TRUNCATED : DECODE_FLAG_MALFORMED;
        return;
    }
    uint32_t header_len = (uint32_t)(p[12] >> 4) * 4;
    r->seq = be32(p + 4);
    r->ack = be32(p + 8);
    r->tcp_flags = (uint16_t)(p[13] | ((p[12] & 1) << 8));
    r->window = be16(p + 14);
    r->tcp_header_len = (uint8_t)header_len;
    if (header_len < 20) {
        r->flags |= DECODE_FLAG_MALFORMED;
        r->tcp_payload_len = wire - header_len; /* wire >= 16 >= header_len */
        return;
    }
    if (header_len > wire) {
        r->flags |= DECODE_FLAG_MALFORMED;
        return;
    }
    r->tcp_payload_len = wire - header_len;
    if (readable < header_len) r->flags |= DECODE_FLAG_TRUNCATED;
    uint32_t options_captured = readable <= 20 ? 0 : (readable < header_len ? readable : header_len) - 20;
    decode_tcp_options(p + 20, options_captured, r);
}

/* Transport header after the IP header(s): `proto` at `p`. */
static void decode_transport(uint8_t proto, const uint8_t *p, uint32_t cap, uint32_t wire, row *r, int depth,
                             int is_v6) {
    r->ip_proto = proto;
    switch (proto) {
    case 6:
        decode_tcp(p, cap, wire, r);
        break;
    case 17:
    case 136: /* UDP, UDP-Lite */
        if (cap >= 4) {
            r->sport = be16(p);
            r->dport = be16(p + 2);
        } else
            r->flags |= DECODE_FLAG_TRUNCATED;
        break;
    case 1: /* ICMP: destination unreachable, source quench, redirect, time exceeded, parameter problem quote a packet
             */
        if (!is_v6 && cap >= 1 && (p[0] == 3 || p[0] == 4 || p[0] == 5 || p[0] == 11 || p[0] == 12))
            r->flags |= DECODE_FLAG_IN_ICMP_ERROR;
        break;
    case 58: /* ICMPv6 errors are types 1..4 */
        if (is_v6 && cap >= 1 && p[0] >= 1 && p[0] <= 4) r->flags |= DECODE_FLAG_IN_ICMP_ERROR;
        break;
    case 4:
    case 41: /* IPv4 / IPv6 in IP: the inner packet describes the flow */
        if (depth < MAX_ENCAPSULATION_DEPTH && cap >= 1) {
            uint8_t version = p[0] >> 4;
            if ((proto == 4 && version == 4) || (proto == 41 && version == 6)) decode_ip(p, cap, wire, r, depth + 1);
        }
        break;
    case 47: { /* GRE (RFC 2784/2890), version 0: flags, protocol type, optional checksum/key/sequence */
        if (cap < 4 || depth >= MAX_ENCAPSULATION_DEPTH) break;
        uint16_t gre_flags = be16(p);
        if ((gre_flags & 7) != 0) break;
        uint32_t hl =
            4 + ((gre_flags & 0x8000) ? 4 : 0) + ((gre_flags & 0x2000) ? 4 : 0) + ((gre_flags & 0x1000) ? 4 : 0);
        if (cap < hl || wire < hl) break;
        decode_ethertype(be16(p + 2), p + hl, cap - hl, wire - hl, r, depth + 1);
        break;
    }
    default:
        break;
    }
}

static void reset_ip_fields(row *r) {
    /* A tunnel's inner packet replaces what the outer one wrote. */
    uint8_t keep = r->flags & (DECODE_FLAG_TRUNCATED | DECODE_FLAG_MALFORMED);
    memset(r, 0, sizeof *r);
    r->wscale = -1;
    r->flags = keep;
}

static void decode_ipv4(const uint8_t *p, uint32_t cap, uint32_t wire, row *r, int depth) {
    if (cap < 20) {
        r->flags |= DECODE_FLAG_TRUNCATED;
        return;
    }
    if ((p[0] >> 4) != 4) {
        r->flags |= DECODE_FLAG_MALFORMED;
        return;
    }
    uint32_t header_len = (uint32_t)(p[0] & 0x0f) * 4;
    if (header_len < 20) {
        r->flags |= DECODE_FLAG_MALFORMED;
        return;
    }
    uint32_t total_len = be16(p + 2);
    if (total_len == 0) total_len = wire; /* TSO on the capturing host: length left 0 */
    if (total_len < header_len) {
        r->flags |= DECODE_FLAG_MALFORMED;
        return;
    }
    if (wire < total_len) total_len = wire; /* clip to what the frame carried on the wire */
    if (total_len < header_len) {
        r->flags |= DECODE_FLAG_MALFORMED;
        return;
    }
    reset_ip_fields(r);
    r->ip_version = 4;
    map_ipv4(r->src, p + 12);
    map_ipv4(r->dst, p + 16);
    r->ip_id = be16(p + 4);
    r->flags |= DECODE_FLAG_IP_ID_VALID;
    r->ttl = p[8];
    r->ecn = p[1] & DECODE_ECN_MASK; /* low 2 bits of the TOS byte (RFC 3168) */
    r->ip_proto = p[9];
    r->ip_payload_len = total_len - header_len;
    if (header_len > 20) r->flags |= DECODE_FLAG_IP_OPTIONS;
    uint16_t frag = be16(p + 6);
    uint32_t frag_offset = (uint32_t)(frag & 0x1fff) * 8;
    r->frag_offset = (uint16_t)frag_offset;
    if (frag & 0x2000) r->flags |= DECODE_FLAG_IP_MORE_FRAGMENTS | DECODE_FLAG_IP_FRAGMENT;
    if (frag_offset) {
        r->flags |= DECODE_FLAG_IP_FRAGMENT;
        return;
    }
    if (cap < header_len) {
        r->flags |= DECODE_FLAG_TRUNCATED;
        return;
    }
    uint8_t proto = p[9];
    const uint8_t *q = p + header_len;
    uint32_t qcap = cap - header_len, qwire = total_len - header_len;
    /* IPsec AH in IPv4: next header, length in 4-byte words minus 2. */
    for (int i = 0; proto == 51 && i < MAX_IPV6_EXTENSION_HEADERS; i++) {
        if (qcap < 2) {
            r->flags |= DECODE_FLAG_TRUNCATED;
            return;
        }
        uint32_t ah_len = ((uint32_t)q[1] + 2) * 4;
        if (ah_len > qcap || ah_len > qwire) {
            r->flags |= DECODE_FLAG_TRUNCATED;
            return;
        }
        proto = q[0];
        q += ah_len;
        qcap -= ah_len;
        qwire -= ah_len;
    }
    r->ip_payload_len = qwire;
    decode_transport(proto, q, qcap, qwire, r, depth, 0);
}

static void decode_ipv6(const uint8_t *p, uint32_t cap, uint32_t wire, row *r, int depth) {
    if (cap < 40 || wire < 40) {
        r->flags |= DECODE_FLAG_TRUNCATED;
        return;
    }
    if ((p[0] >> 4) != 6) {
        r->flags |= DECODE_FLAG_MALFORMED;
        return;
    }
    uint32_t total_len = 40u + be16(p + 4);
    if (total_len == 40 && p[6] == 0) total_len = wire; /* jumbogram or TSO: length from the frame */
    if (wire < total_len) total_len = wire;
    reset_ip_fields(r);
    r->ip_version = 6;
    memcpy(r->src, p + 8, 16);
    memcpy(r->dst, p + 24, 16);
    r->ttl = p[7];
    r->ecn = (uint8_t)((p[1] >> 4) & DECODE_ECN_MASK); /* low 2 bits of the traffic class */
    uint8_t next = p[6];
    const uint8_t *q = p + 40;
    uint32_t qcap = cap - 40, qwire = total_len - 40;
    for (int i = 0; i < MAX_IPV6_EXTENSION_HEADERS; i++) {
        uint32_t ext_len;
        if (next == 0 || next == 43 || next == 60 || next == 135 || next == 139 || next == 140) {
            if (qcap < 2) {
                r->ip_proto = next;
                r->ip_payload_len = qwire;
                r->flags |= DECODE_FLAG_TRUNCATED;
                return;
            }
            ext_len = ((uint32_t)q[1] + 1) * 8;
        } else if (next == 51) {
            if (qcap < 2) {
                r->ip_proto = next;
                r->ip_payload_len = qwire;
                r->flags |= DECODE_FLAG_TRUNCATED;
                return;
            }
            ext_len = ((uint32_t)q[1] + 2) * 4;
        } else if (next == 44) {
            if (qcap < 8) {
                r->ip_proto = next;
                r->ip_payload_len = qwire;
                r->flags |= DECODE_FLAG_TRUNCATED;
                return;
            }
            ext_len = 8;
            uint16_t off_m = be16(q + 2);
            r->ip_id = be32(q + 4);
            r->frag_offset = (uint16_t)(off_m & 0xfff8);
            r->flags |= DECODE_FLAG_IP_FRAGMENT;
            if (off_m & 1) r->flags |= DECODE_FLAG_IP_MORE_FRAGMENTS;
            if ((off_m & 0xfff8) != 0) {
                if (ext_len <= qwire)
                    qwire -= ext_len;
                else
                    qwire = 0;
                r->ip_proto = q[0];
                r->ip_payload_len = qwire;
                return;
            }
        } else {
            break;
        }
        if (ext_len > qwire) {
            r->ip_proto = next;
            r->ip_payload_len = 0;
            r->flags |= DECODE_FLAG_MALFORMED;
            return;
        }
        if (ext_len > qcap) {
            r->ip_proto = next;
            r->ip_payload_len = qwire - ext_len;
            r->flags |= DECODE_FLAG_TRUNCATED;
            return;
        }
        next = q[0];
        q += ext_len;
        qcap -= ext_len;
        qwire -= ext_len;
    }
    r->ip_payload_len = qwire;
    decode_transport(next, q, qcap, qwire, r, depth, 1);
}

static void decode_ip(const uint8_t *p, uint32_t cap, uint32_t wire, row *r, int depth) {
    if (cap < 1) {
        r->flags |= DECODE_FLAG_TRUNCATED;
        return;
    }
    uint8_t version = p[0] >> 4;
    if (version == 4)
        decode_ipv4(p, cap, wire, r, depth);
    else if (version == 6)
        decode_ipv6(p, cap, wire, r, depth);
}

static void decode_ethernet(const uint8_t *p, uint32_t cap, uint32_t wire, row *r, int depth) {
    if (cap < 14 || wire < 14) {
        r->flags |= DECODE_FLAG_TRUNCATED;
        return;
    }
    decode_ethertype(be16(p + 12), p + 14, cap - 14, wire - 14, r, depth);
}

/* PPP protocol field (1 or 2 bytes, RFC 1661 allows compressing it to 1 when odd). */
static void decode_ppp_protocol(const uint8_t *p, uint32_t cap, uint32_t wire, row *r, int depth) {
    if (cap < 1) {
        r->flags |= DECODE_FLAG_TRUNCATED;
        return;
    }
    uint16_t protocol;
    uint32_t hl;
    if (p[0] & 1) {
        protocol = p[0];
        hl = 1;
    } else {
        if (cap < 2) {
            r->flags |= DECODE_FLAG_TRUNCATED;
            return;
        }
        protocol = be16(p);
        hl = 2;
    }
    if (wire < hl) return;
    if (protocol == 0x21)
        decode_ipv4(p + hl, cap - hl, wire - hl, r, depth);
    else if (protocol == 0x57)
        decode_ipv6(p + hl, cap - hl, wire - hl, r, depth);
}

/* An EtherType and the bytes after it, through VLAN tags (802.1Q, 802.1ad,
 * the pre-standard QinQ 0x9100/0x9200), PPPoE session, MPLS and LLC/SNAP. */
static void decode_ethertype(uint16_t ethertype, const uint8_t *p, uint32_t cap, uint32_t wire, row *r, int depth) {
    for (; depth < MAX_ENCAPSULATION_DEPTH; depth++) {
        switch (ethertype) {
        case 0x0800:
            decode_ip(p, cap, wire, r, depth);
            return; /* tshark: version 6 under 0x0800 is IPv6 */
        case 0x86dd:
            decode_ipv6(p, cap, wire, r, depth);
            return;
        case 0x8100:
        case 0x88a8:
        case 0x9100:
        case 0x9200:
            if (cap < 4 || wire < 4) {
                r->flags |= DECODE_FLAG_TRUNCATED;
                return;
            }
            ethertype = be16(p + 2);
            p += 4;
            cap -= 4;
            wire -= 4;
            continue;
        case 0x8864: /* PPPoE session: ver/type, code, session id, length; then PPP protocol */
            if (cap < 6 || wire < 6) {
                r->flags |= DECODE_FLAG_TRUNCATED;
                return;
            }
            /* The session length ends the payload, as in tshark: Ethernet padding after it
             * is not part of an IP packet whose own length field is 0 (TSO). */
            if ((uint32_t)be16(p + 4) + 6 < wire) wire = (uint32_t)be16(p + 4) + 6;
            decode_ppp_protocol(p + 6, cap - 6, wire - 6, r, depth);
            return;
        case 0x8847:
        case 0x8848: /* MPLS: 4-byte labels until bottom-of-stack, then IP by version nibble */
            for (int i = 0; i < MAX_ENCAPSULATION_DEPTH; i++) {
                if (cap < 4 || wire < 4) {
                    r->flags |= DECODE_FLAG_TRUNCATED;
                    return;
                }
                int bottom = p[2] & 1;
                p += 4;
                cap -= 4;
                wire -= 4;
                if (bottom) {
                    decode_ip(p, cap, wire, r, depth);
                    return;
                }
            }
            return;
        case 0x6558: /* transparent Ethernet bridging (GRE) */
            decode_ethernet(p, cap, wire, r, depth + 1);
            return;
        default:
            if (ethertype <= 1500) { /* 802.3 length field: LLC, maybe SNAP with an EtherType */
                if (cap >= 8 && wire >= 8 && p[0] == 0xaa && p[1] == 0xaa && p[2] == 0x03) {
                    ethertype = be16(p + 6);
                    p += 8;
                    cap -= 8;
                    wire -= 8;
                    continue;
                }
            }
            return;
        }
    }
}

void decode_frame(const uint8_t *frame, uint32_t cap_len, uint32_t frame_len, uint16_t link_type,
                  const decode_columns *cols, size_t i) {
    row r;
    memset(&r, 0, sizeof r);
    r.wscale = -1;
    if (frame_len < cap_len) frame_len = cap_len;
    const uint8_t *p = frame;
    uint32_t cap = cap_len, wire = frame_len;
    switch (link_type) {
    case 1: /* Ethernet */
        decode_ethernet(p, cap, wire, &r, 0);
        break;
    case 113: /* Linux cooked v1: packet type, ARPHRD, address length, address[8], protocol */
        if (cap < 16) {
            r.flags |= DECODE_FLAG_TRUNCATED;
            break;
        }
        /* `tcpdump -i any` names no interface here, only whether the frame was going out:
         * the two copies of a forwarded or bridged packet differ in that */
        if (cols) cols->interface[i] = (uint16_t)(DECODE_INTERFACE_SLL_BASE | (be16(p) == SLL_PACKET_OUTGOING));
        if (be16(p + 2) == 824) break; /* ARPHRD_NETLINK: netlink messages, no IP */
        decode_ethertype(be16(p + 14), p + 16, cap - 16, wire - 16, &r, 0);
        break;
    case 276: /* Linux cooked v2: protocol, reserved, ifindex, ARPHRD, packet type, address length, address[8] */
        if (cap < 20) {
            r.flags |= DECODE_FLAG_TRUNCATED;
            break;
        }
        /* the interface the frame was seen on (`tcpdump -i any`): its ifindex */
        if (cols) cols->interface[i] = (uint16_t)be32(p + 4);
        if (be16(p + 8) == 824) break;
        decode_ethertype(be16(p), p + 20, cap - 20, wire - 20, &r, 0);
        break;
    case 12:
    case 14:
    case 101: /* raw IP, version from the first nibble */
        decode_ip(p, cap, wire, &r, 0);
        break;
    case 228:
        decode_ipv4(p, cap, wire, &r, 0);
        break;
    case 229:
        decode_ipv6(p, cap, wire, &r, 0);
        break;
    case 0:
    case 108: { /* BSD NULL: AF_ value in the capturing host's byte order; LOOP: network order */
        if (cap < 4) {
            r.flags |= DECODE_FLAG_TRUNCATED;
            break;
        }
        uint32_t family = link_type == 108 ? be32(p) : le32(p);
        if (link_type == 0 && (family & 0xffff0000u)) family = be32(p); /* written by a big-endian host */
        if (family == 2)
            decode_ipv4(p + 4, cap - 4, wire - 4, &r, 0);
        else if (family == 10 || family == 24 || family == 28 || family == 30)
            decode_ipv6(p + 4, cap - 4, wire - 4, &r, 0);
        break;
    }
    case 9:
    case 50: /* PPP; PPP in HDLC-like framing (may also hold Cisco HDLC) */
        if (cap >= 2 && p[0] == 0xff && p[1] == 0x03) {
            p += 2;
            cap -= 2;
            wire -= 2;
        } else if (link_type == 50 && cap >= 4 && (p[0] == 0x0f || p[0] == 0x8f)) {
            decode_ethertype(be16(p + 2), p + 4, cap - 4, wire - 4, &r, 0);
            break;
        }
        decode_ppp_protocol(p, cap, wire, &r, 0);
        break;
    case 10: /* FDDI: frame control, destination, source (13 bytes); LLC frames (FC 0x50-0x57) carry LLC/SNAP */
        if (cap < 13 || wire < 13) {
            r.flags |= DECODE_FLAG_TRUNCATED;
            break;
        }
        if ((p[0] & 0xf8) == 0x50)
            decode_ethertype(0, p + 13, cap - 13, wire - 13, &r, 0); /* 0 = "802.3 length": LLC follows */
        break;
    case 127:   /* radiotap: little-endian header length at bytes 2..3, then 802.11 */
    case 105: { /* IEEE 802.11: unprotected data frames carry LLC/SNAP after a 24/30-byte header (+2 QoS) */
        uint32_t skip = 0;
        if (link_type == 127) {
            if (cap < 4) {
                r.flags |= DECODE_FLAG_TRUNCATED;
                break;
            }
            skip = le16(p + 2);
        }
        if (cap < skip + 24 || wire < skip + 24) {
            r.flags |= DECODE_FLAG_TRUNCATED;
            break;
        }
        const uint8_t *w = p + skip;
        uint8_t fc0 = w[0], fc1 = w[1];
        if ((fc0 & 0x0c) != 0x08 || (fc1 & 0x40) || (fc0 & 0x40)) break; /* not data, protected, or null-data */
        uint32_t hl = 24 + (((fc1 & 3) == 3) ? 6 : 0) + ((fc0 & 0x80) ? 2 : 0);
        if (cap < skip + hl || wire < skip + hl) {
            r.flags |= DECODE_FLAG_TRUNCATED;
            break;
        }
        decode_ethertype(0, w + hl, cap - skip - hl, wire - skip - hl, &r, 0);
        break;
    }
    case 104: /* Cisco HDLC: address, control, EtherType */
        if (cap < 4) {
            r.flags |= DECODE_FLAG_TRUNCATED;
            break;
        }
        decode_ethertype(be16(p + 2), p + 4, cap - 4, wire - 4, &r, 0);
        break;
    default:
        r.flags |= DECODE_FLAG_UNSUPPORTED_LINK;
        break;
    }
    cols->frame_len[i] = frame_len;
    cols->cap_len[i] = cap_len;
    cols->link_type[i] = link_type;
    cols->decode_flags[i] = r.flags;
    cols->ip_version[i] = r.ip_version;
    memcpy(cols->src_addr[i], r.src, 16);
    memcpy(cols->dst_addr[i], r.dst, 16);
    cols->ip_id[i] = r.ip_id;
    cols->ttl[i] = r.ttl;
    cols->ip_proto[i] = r.ip_proto;
    cols->ip_payload_len[i] = r.ip_payload_len;
    cols->sport[i] = r.sport;
    cols->dport[i] = r.dport;
    cols->seq[i] = r.seq;
    cols->ack[i] = r.ack;
    cols->tcp_flags[i] = r.tcp_flags;
    cols->window[i] = r.window;
    cols->tcp_header_len[i] = r.tcp_header_len;
    cols->tcp_payload_len[i] = r.tcp_payload_len;
    cols->opt_mss[i] = r.mss;
    cols->opt_wscale[i] = r.wscale;
    cols->opt_sack_permitted[i] = r.sack_permitted;
    cols->opt_has_ts[i] = r.has_ts;
    cols->opt_tsval[i] = r.tsval;
    cols->opt_tsecr[i] = r.tsecr;
    cols->sack_count[i] = r.sack_count;
    memcpy(cols->sack_left[i], r.sack_left, sizeof r.sack_left);
    memcpy(cols->sack_right[i], r.sack_right, sizeof r.sack_right);
    cols->ip_frag_offset[i] = r.frag_offset;
    cols->opt_mptcp[i] = r.mptcp;
    cols->ip_ecn[i] = r.ecn;
}
