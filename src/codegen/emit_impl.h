/* emit_impl.h — internals shared by emit.c (kernels) and module.c (translation units). */
#ifndef LT_CODEGEN_EMIT_IMPL_H
#define LT_CODEGEN_EMIT_IMPL_H

#include "codegen.h"

/* Emit n kernels (comment, signature, body) in order; first error wins. */
lt_status lt_emit_kernels_(lt_ctx *ctx, const lt_lang *lang, const lt_emit_kernel *kernels, int n, lt_strbuf *out);

#endif
