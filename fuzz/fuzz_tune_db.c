/* fuzz_tune_db.c — libFuzzer target for the tuning database parser (src/tune/tune_db.c): arbitrary
 * bytes loaded as a database file. A database that loads must hold only valid entries: each entry's
 * schedule, written back as text and parsed again, gives the same text (what lt_tune_db_save relies
 * on), and lookups of its own keys find it. Anything else aborts, which the fuzzer reports.
 * Build: cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DLATHE_FUZZ=ON && cmake --build build-fuzz
 * Run:   build-fuzz/fuzz_tune_db -max_len=4096 CORPUS_DIR   (seeds: python3 fuzz/make_corpus.py DIR) */
#include "tune/tune.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lt_ctx ctx = {0};
    lt_tune_db *db = NULL;
    if (lt_tune_db_new(&ctx, &db) != LT_OK) return 0;
    if (lt_tune_db_load_text(&ctx, db, data, size, "fuzz.tsv") == LT_OK) {
        for (int i = 0; i < lt_tune_db_count(db); i++) {
            const lt_tune_entry *e = lt_tune_db_get(db, i);
            if (!e || lt_tune_db_lookup(db, &e->key) != e || !(e->time_s > 0)) abort();
            lt_schedule s, back;
            lt_tune_entry_schedule(e, &s);
            lt_strbuf a = {0}, b = {0};
            lt_tune_schedule_format(&s, &a);
            lt_ctx c2 = {0};
            if (!a.s || lt_tune_schedule_parse(&c2, a.s, &back) != LT_OK) abort();
            lt_tune_schedule_format(&back, &b);
            if (!b.s || strcmp(a.s, b.s) != 0) abort();
            lt_sb_free(&a);
            lt_sb_free(&b);
        }
    }
    lt_tune_db_free(db);
    return 0;
}
