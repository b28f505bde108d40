/* cuda_output.c — what `lathe compile MODEL --target cuda -o DIR` writes (lt_backend_vtbl
 * write_output): the compile emitted DIR/model.cu (with kernels.txt and groups.txt) and needs no
 * GPU; the translation unit is built for the target's architecture into DIR/model.cubin (or .ptx)
 * when an NVRTC library is found, else a warning says why there is none.
 */
#include "cuda_impl.h"

#include <stdio.h>

lt_status lt_cuda_write_output(lt_ctx *ctx, const lt_target *t, const lt_output_request *req, lt_strbuf *log) {
    char path[4096];
    snprintf(path, sizeof path, "%s/model.cu", req->dir);
    lt_sb_printf(log, "cuda: %d kernels (+%d weight packing), %d host groups; wrote %s (%zu bytes), kernels.txt, groups.txt\n",
                 req->n_kernels, req->n_pack_kernels, req->n_host_groups, req->esc(path), req->source_len);
    lt_ctx c2 = {0};
    lt_nvrtc *nv = NULL;
    if (lt_nvrtc_open_path(&c2, req->nvrtc, &nv) != LT_OK) {
        char msg[sizeof c2.msg + 16];
        snprintf(msg, sizeof msg, "no cubin: %s", c2.msg);
        req->warn(msg);
        return LT_OK;
    }
    lt_status s = LT_OK;
    lt_cuda_image img = {0};
    lt_cuda_compile_options co = {.name = "model.cu"};
    if ((s = lt_cuda_build(ctx, nv, req->source ? req->source : "", t->arch, NULL, &co, &img)) == LT_OK) {
        snprintf(path, sizeof path, "%s/model.%s", req->dir, img.is_cubin ? "cubin" : "ptx");
        FILE *o = fopen(path, "wb");
        if (!o || fwrite(img.data, 1, img.size, o) != img.size) s = lt_error(ctx, LT_ERR_IO, "%s: cannot write", path);
        else lt_sb_printf(log, "cuda: wrote %s (%zu bytes, %s, NVRTC %.2f s)\n", req->esc(path), img.size, req->esc(t->arch),
                          img.seconds);
        if (o && fclose(o) != 0 && s == LT_OK) s = lt_error(ctx, LT_ERR_IO, "%s: cannot write", path);
    }
    lt_cuda_image_free(&img);
    lt_nvrtc_close(nv);
    return s;
}
