/* hash.c — SHA-256 (FIPS 180-4) for the compiled-module cache and tuning database keys, and FNV-1a
 * for the in-memory hash tables; see hash.h for why each.
 * Invariant: byte-order independent (message words are assembled big-endian by hand). */
#include "hash.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void block(lt_sha256 *s, const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
    s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

void lt_sha256_init(lt_sha256 *s) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
    s->nbuf = 0;
}

void lt_sha256_update(lt_sha256 *s, const void *data, size_t n) {
    const uint8_t *p = data;
    s->len += n;
    if (s->nbuf) {
        size_t take = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, take);
        s->nbuf += take, p += take, n -= take;
        if (s->nbuf < 64) return;
        block(s, s->buf);
        s->nbuf = 0;
    }
    for (; n >= 64; p += 64, n -= 64) block(s, p);
    memcpy(s->buf, p, n);
    s->nbuf = n;
}

void lt_sha256_final(lt_sha256 *s, uint8_t out[32]) {
    uint64_t bits = s->len * 8;
    uint8_t pad[72] = {0x80};
    size_t npad = (s->nbuf < 56 ? 56 : 120) - s->nbuf;
    for (int i = 0; i < 8; i++) pad[npad + i] = (uint8_t)(bits >> (56 - 8 * i));
    lt_sha256_update(s, pad, npad + 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) out[4 * i + j] = (uint8_t)(s->h[i] >> (24 - 8 * j));
}

static void to_hex(const uint8_t d[32], char out[65]) {
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

void lt_sha256_hex(const void *data, size_t n, char out[65]) {
    lt_sha256 s;
    uint8_t d[32];
    lt_sha256_init(&s);
    lt_sha256_update(&s, data, n);
    lt_sha256_final(&s, d);
    to_hex(d, out);
}

bool lt_sha256_fd(int fd, char out[65], uint64_t *size) {
    lt_sha256 s;
    uint8_t buf[65536], d[32];
    lt_sha256_init(&s);
    off_t off = 0;
    for (;;) {
        ssize_t r = pread(fd, buf, sizeof buf, off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return false;
        if (r == 0) break;
        lt_sha256_update(&s, buf, (size_t)r);
        off += r;
    }
    lt_sha256_final(&s, d);
    to_hex(d, out);
    if (size) *size = (uint64_t)off;
    return true;
}

/* ---- FNV-1a ---- */

uint64_t lt_fnv1a_more(uint64_t h, const void *data, size_t n) {
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * LT_FNV1A_PRIME;
    return h;
}

uint64_t lt_fnv1a(const void *data, size_t n) { return lt_fnv1a_more(LT_FNV1A_BASIS, data, n); }

uint64_t lt_fnv1a_str(const char *s) {
    uint64_t h = LT_FNV1A_BASIS;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * LT_FNV1A_PRIME;
    return h;
}
