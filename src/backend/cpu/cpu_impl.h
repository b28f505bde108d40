/* cpu_impl.h — internals of the CPU backend shared by cpu_compile.c and cpu_split.c. */
#ifndef LT_BACKEND_CPU_IMPL_H
#define LT_BACKEND_CPU_IMPL_H

#include "cpu.h"

/* The source of the shared prelude library: every prelude header of the C target compiled with
 * LT_PRELUDE_LIBRARY, plus an exported lt_pl_<f>(int threads, ...) per public microkernel function. */
lt_status lt_cpu_prelude_library_source(lt_ctx *ctx, lt_strbuf *out);
/* The module's translation unit for use with the library: its prelude up to the microkernel
 * headers, forwarding stubs for the microkernel functions its kernels call, then its kernels.
 * false (out partly written) when the module has no microkernel section or calls none of them. */
bool lt_cpu_split_module(const char *source, const char *library_source, lt_strbuf *out);

#endif
