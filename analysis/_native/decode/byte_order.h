/*
 * byte_order.h -- read big- and little-endian integers from unaligned bytes
 * (network headers are big-endian; capture file headers are in the writer's order).
 */
#ifndef SPLINE_DECODE_BYTE_ORDER_H
#define SPLINE_DECODE_BYTE_ORDER_H

#include <stdint.h>

static inline uint16_t be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t le32(const uint8_t *p) {
    return p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

#endif
