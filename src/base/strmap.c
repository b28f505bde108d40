/* strmap.c — the one string-keyed hash map (strmap.h). */
#include "strmap.h"

#include <string.h>

#include "base.h"
#include "hash.h"

static uint32_t hash_bytes(const char *s, size_t n) { return (uint32_t)lt_fnv1a(s, n); }

static bool key_eq(const char *key, const char *s, size_t n) { return strncmp(key, s, n) == 0 && key[n] == 0; }

void *lt_strmap_get(const lt_strmap *m, const char *key, size_t len) {
    if (!m->cap) return NULL;
    uint32_t mask = m->cap - 1, i = hash_bytes(key, len) & mask;
    while (m->keys[i]) {
        if (key_eq(m->keys[i], key, len)) return m->vals[i];
        i = (i + 1) & mask;
    }
    return NULL;
}

static bool grow(lt_strmap *m) {
    uint32_t cap = m->cap ? m->cap * 2 : 64;
    if (cap < m->cap) return false;
    const char **keys = lt_mem_calloc(cap, sizeof *keys);
    void **vals = lt_mem_calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        lt_mem_free(keys);
        lt_mem_free(vals);
        return false;
    }
    for (uint32_t k = 0; k < m->cap; k++) {
        if (!m->keys[k]) continue;
        uint32_t i = hash_bytes(m->keys[k], strlen(m->keys[k])) & (cap - 1);
        while (keys[i]) i = (i + 1) & (cap - 1);
        keys[i] = m->keys[k];
        vals[i] = m->vals[k];
    }
    lt_mem_free(m->keys);
    lt_mem_free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return true;
}

bool lt_strmap_put(lt_strmap *m, const char *key, void *val) {
    if ((m->n + 1) * 2 > m->cap && !grow(m)) return false;
    size_t len = strlen(key);
    uint32_t mask = m->cap - 1, i = hash_bytes(key, len) & mask;
    while (m->keys[i]) {
        if (key_eq(m->keys[i], key, len)) {
            m->vals[i] = val;
            return true;
        }
        i = (i + 1) & mask;
    }
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
    return true;
}

void lt_strmap_free(lt_strmap *m) {
    lt_mem_free(m->keys);
    lt_mem_free(m->vals);
    memset(m, 0, sizeof *m);
}
