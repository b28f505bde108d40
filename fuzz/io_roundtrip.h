/* io_roundtrip.h — shared by fuzz_npy.c and fuzz_npz.c: whether a tensor came back unchanged from
 * the encoder (strings by content where the encoder keeps them, numbers by their bytes). */
#ifndef LT_FUZZ_IO_ROUNDTRIP_H
#define LT_FUZZ_IO_ROUNDTRIP_H

#include "io/io.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Strict UTF-8 (no overlong forms, surrogates or code points past U+10FFFF): what the encoder keeps
 * as it is (byte strings of other bytes come back with U+FFFD). */
static inline bool utf8_ok(const unsigned char *s) {
    while (*s) {
        unsigned c = *s;
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!len) return false;
        uint32_t cp = len == 1 ? c : c & (0x7Fu >> len);
        for (int k = 1; k < len; k++) {
            if ((s[k] & 0xC0) != 0x80) return false;
            cp = cp << 6 | (s[k] & 0x3F);
        }
        static const uint32_t minv[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < minv[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        s += len;
    }
    return true;
}

static inline bool same(const lt_tensor *a, const lt_tensor *b) {
    if (a->dtype != b->dtype || a->rank != b->rank || a->numel != b->numel) return false;
    for (int k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k]) return false;
    if (a->dtype == LT_STRING) {
        for (int64_t i = 0; i < a->numel; i++) {
            const char *x = ((char **)a->data)[i], *y = ((char **)b->data)[i];
            if (utf8_ok((const unsigned char *)x) && strcmp(x, y) != 0) return false;
        }
        return true;
    }
    return memcmp(a->data, b->data, (size_t)lt_tensor_nbytes(a)) == 0;
}

#endif
