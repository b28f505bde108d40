/* strmap.h — the one string-keyed hash map: NUL-terminated keys (not copied: the caller keeps them
 * alive, usually in an arena) to non-NULL pointers, open addressing with linear probing, FNV-1a
 * (hash.h), grown to keep at most half the slots used, heap through lt_mem_*. A set stores each key
 * as its own value. Users: the importer's name scopes, the emitter's identifier set, the tuner's
 * set of schedules tried.
 */
#ifndef LT_BASE_STRMAP_H
#define LT_BASE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lt_strmap {
    const char **keys;
    void **vals;
    uint32_t cap, n;
} lt_strmap; /* zero-initialised: empty */

/* The value of the key given as the byte slice key[0..len) (no NUL needed), or NULL. */
void *lt_strmap_get(const lt_strmap *m, const char *key, size_t len);
/* Insert or replace key -> val (val not NULL); false when out of memory (the map is unchanged). */
bool lt_strmap_put(lt_strmap *m, const char *key, void *val);
void lt_strmap_free(lt_strmap *m);

#endif
