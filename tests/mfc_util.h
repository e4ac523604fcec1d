/*
 * Test helpers for compiled model files (docs/format.md): recompute the
 * checksums of a file that was changed on purpose, so that a test or a
 * fuzzer reaches the checks behind them (the decoder) instead of stopping
 * at the first checksum.
 */
#ifndef MINFER_TESTS_MFC_UTIL_H
#define MINFER_TESTS_MFC_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <xxhash.h>

static inline uint32_t mfc_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t mfc_le64(const uint8_t *p) {
    return (uint64_t)mfc_le32(p) | (uint64_t)mfc_le32(p + 4) << 32;
}

static inline void mfc_put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Section i's table entry, or NULL when the header or table is out of range. */
static inline uint8_t *mfc_entry(uint8_t *b, size_t n, uint32_t i) {
    if (n < 88)
        return NULL;
    uint64_t table = mfc_le64(b + 32);
    uint32_t count = mfc_le32(b + 40);
    if (i >= count || table > n || (uint64_t)(i + 1) * 32 > n - table)
        return NULL;
    return b + table + (size_t)i * 32;
}

/* The entry of the section named id ("GRPH"), or NULL. */
static inline uint8_t *mfc_find(uint8_t *b, size_t n, const char *id) {
    uint8_t *e;
    for (uint32_t i = 0; (e = mfc_entry(b, n, i)) != NULL; i++)
        if (memcmp(e, id, 4) == 0)
            return e;
    return NULL;
}

/* Recomputes what can be: each in-range section's checksum, the table's,
 * the header's (and, with fix_size, the recorded file size). */
static inline void mfc_fix_checksums(uint8_t *b, size_t n, int fix_size) {
    if (n < 88)
        return;
    if (fix_size)
        mfc_put64(b + 24, n);
    uint8_t *e;
    uint32_t i = 0;
    for (; (e = mfc_entry(b, n, i)) != NULL; i++) {
        uint64_t off = mfc_le64(e + 8), len = mfc_le64(e + 16);
        if (off <= n && len <= n - off)
            mfc_put64(e + 24, XXH3_64bits(b + off, (size_t)len));
    }
    uint64_t table = mfc_le64(b + 32);
    if (i && table <= n && (uint64_t)i * 32 <= n - table)
        mfc_put64(b + 72, XXH3_64bits(b + table, (size_t)i * 32));
    mfc_put64(b + 80, XXH3_64bits(b, 80));
}

#endif
