/* hash.h — lathe's two hashes: SHA-256, the content hash that keys the compiled-module cache and the
 * tuning database, and FNV-1a (64-bit), the hash of the in-memory hash tables.
 *
 * Why SHA-256 and not a fast 64/128-bit hash: the cache maps a key to native code that gets
 * dlopen'ed and run. A collision would silently run the wrong kernels, and the cache directory can
 * hold many thousands of modules (one per conformance model); a cryptographic hash makes a
 * collision a non-event without reasoning about key distributions. It costs ~5 ms per MB of source
 * here, small next to the C compiler (and to the 50 ms cache-hit budget). FIPS 180-4, streaming.
 * Written by hand because no dependency offers it: the only library lathe links besides libc and
 * libm is zlib (for .npz), which has CRC-32 and Adler-32 but no cryptographic hash.
 * Entry points: lt_sha256_init/update/final, lt_sha256_hex, lt_sha256_fd (a file through its
 * descriptor: the compiled-module cache checks what it loads against a manifest this way).
 *
 * FNV-1a picks the slot of a key in an open-addressing table (names, sets of strings, node
 * signatures). Its values are never stored or shown: nothing outside one process depends on them.
 * Entry points: lt_fnv1a (bytes), lt_fnv1a_str (a NUL-terminated string), lt_fnv1a_more (continue
 * a hash over more bytes: several fields, from LT_FNV1A_BASIS).
 */
#ifndef LT_BASE_HASH_H
#define LT_BASE_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lt_sha256 {
    uint32_t h[8];
    uint64_t len;      /* bytes hashed so far */
    uint8_t buf[64];
    size_t nbuf;
} lt_sha256;

void lt_sha256_init(lt_sha256 *s);
void lt_sha256_update(lt_sha256 *s, const void *data, size_t n);
void lt_sha256_final(lt_sha256 *s, uint8_t out[32]);
/* Digest of one buffer as 64 lowercase hex digits + NUL. */
void lt_sha256_hex(const void *data, size_t n, char out[65]);
/* Digest of the whole file open as fd (read from offset 0 with pread: the file offset is left alone)
 * as 64 hex digits + NUL; *size gets the bytes hashed. false (errno set) when a read fails. */
bool lt_sha256_fd(int fd, char out[65], uint64_t *size);

/* FNV-1a's 64-bit offset basis and prime. */
#define LT_FNV1A_BASIS 14695981039346656037ull
#define LT_FNV1A_PRIME 1099511628211ull
/* h continued over n bytes of data (h = LT_FNV1A_BASIS to start). */
uint64_t lt_fnv1a_more(uint64_t h, const void *data, size_t n);
/* FNV-1a of n bytes of data, and of the bytes of s before its NUL. */
uint64_t lt_fnv1a(const void *data, size_t n);
uint64_t lt_fnv1a_str(const char *s);

#endif
