/* nn_kernels_tmpl.h — the dense kernel bodies for one element type. nn_kernels.c includes this file
 * once per type with NN_T (the element), NN_V (a 16-byte GNU vector of NN_T), NN_VW (its lanes) and
 * NN_FN(name) (the type-suffixed name) defined. No include guard on purpose.
 *
 * GEMM: C[M,N] (+)= A[M,K] B[K,N], blocked over K (NN_KB) and M (NN_MB) so the B panel and the A
 * block stay in cache; the inner tile is 4 x (2*NN_VW) accumulators held in vector registers.
 * Convolution = im2col over a chunk of output rows (bounded scratch) + GEMM per group.
 * Transposed convolution = GEMM into columns + col2im scatter. All loops read only inside the
 * tensors whose geometry the caller validated. */

#define NN_NR (2 * NN_VW)
#define NN_KB 256
#define NN_MB 64
#define NN_COL_BUDGET ((int64_t)1 << 20) /* elements of im2col scratch per chunk */

static inline NN_V NN_FN(vld)(const NN_T *p) {
    NN_V v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void NN_FN(vst)(NN_T *p, NN_V v) { memcpy(p, &v, sizeof v); }

/* C[4, NR] += A[4, kb] * B[kb, NR] */
static void NN_FN(micro4)(int64_t kb, const NN_T *A, int64_t ars, int64_t acs, const NN_T *B, int64_t ldb,
                          NN_T *C, int64_t ldc) {
    NN_V c00 = NN_FN(vld)(C), c01 = NN_FN(vld)(C + NN_VW);
    NN_V c10 = NN_FN(vld)(C + ldc), c11 = NN_FN(vld)(C + ldc + NN_VW);
    NN_V c20 = NN_FN(vld)(C + 2 * ldc), c21 = NN_FN(vld)(C + 2 * ldc + NN_VW);
    NN_V c30 = NN_FN(vld)(C + 3 * ldc), c31 = NN_FN(vld)(C + 3 * ldc + NN_VW);
    for (int64_t k = 0; k < kb; k++) {
        NN_V b0 = NN_FN(vld)(B), b1 = NN_FN(vld)(B + NN_VW);
        NN_T a0 = A[0], a1 = A[ars], a2 = A[2 * ars], a3 = A[3 * ars];
        c00 += b0 * a0;
        c01 += b1 * a0;
        c10 += b0 * a1;
        c11 += b1 * a1;
        c20 += b0 * a2;
        c21 += b1 * a2;
        c30 += b0 * a3;
        c31 += b1 * a3;
        B += ldb;
        A += acs;
    }
    NN_FN(vst)(C, c00);
    NN_FN(vst)(C + NN_VW, c01);
    NN_FN(vst)(C + ldc, c10);
    NN_FN(vst)(C + ldc + NN_VW, c11);
    NN_FN(vst)(C + 2 * ldc, c20);
    NN_FN(vst)(C + 2 * ldc + NN_VW, c21);
    NN_FN(vst)(C + 3 * ldc, c30);
    NN_FN(vst)(C + 3 * ldc + NN_VW, c31);
}

/* C[1, NR] += A[1, kb] * B[kb, NR] */
static void NN_FN(micro1)(int64_t kb, const NN_T *A, int64_t acs, const NN_T *B, int64_t ldb, NN_T *C) {
    NN_V c0 = NN_FN(vld)(C), c1 = NN_FN(vld)(C + NN_VW);
    for (int64_t k = 0; k < kb; k++) {
        NN_T a = A[k * acs];
        c0 += NN_FN(vld)(B) * a;
        c1 += NN_FN(vld)(B + NN_VW) * a;
        B += ldb;
    }
    NN_FN(vst)(C, c0);
    NN_FN(vst)(C + NN_VW, c1);
}

void NN_FN(nn_gemm)(int64_t M, int64_t N, int64_t K, const NN_T *A, int64_t ars, int64_t acs, const NN_T *B,
                    int64_t ldb, NN_T *C, int64_t ldc, bool acc) {
    if (M <= 0 || N <= 0) return;
    if (!acc)
        for (int64_t i = 0; i < M; i++) memset(C + i * ldc, 0, (size_t)N * sizeof(NN_T));
    int64_t nfull = N - N % NN_NR;
    for (int64_t k0 = 0; k0 < K; k0 += NN_KB) {
        int64_t kb = K - k0 < NN_KB ? K - k0 : NN_KB;
        const NN_T *Ak = A + k0 * acs, *Bk = B + k0 * ldb;
        for (int64_t i0 = 0; i0 < M; i0 += NN_MB) {
            int64_t iend = M - i0 < NN_MB ? M : i0 + NN_MB;
            for (int64_t j = 0; j < nfull; j += NN_NR) {
                int64_t i = i0;
                for (; i + 4 <= iend; i += 4)
                    NN_FN(micro4)(kb, Ak + i * ars, ars, acs, Bk + j, ldb, C + i * ldc + j, ldc);
                for (; i < iend; i++) NN_FN(micro1)(kb, Ak + i * ars, acs, Bk + j, ldb, C + i * ldc + j);
            }
            if (nfull < N)
                for (int64_t i = i0; i < iend; i++) {
                    NN_T *c = C + i * ldc;
                    for (int64_t k = 0; k < kb; k++) {
                        NN_T a = Ak[i * ars + k * acs];
                        const NN_T *b = Bk + k * ldb;
                        for (int64_t j = nfull; j < N; j++) c[j] += a * b[j];
                    }
                }
        }
    }
}

/* Row-major strides of the spatial dims `dims`. */
static void NN_FN(sp_strides)(int nsp, const int64_t *dims, int64_t *st) {
    int64_t s = 1;
    for (int d = nsp - 1; d >= 0; d--) {
        st[d] = s;
        s *= dims[d];
    }
}

/* col[Cg*K, nr*Wout] = the input windows of output rows [r0, r0+nr) (rows = all output dims but the
 * last) of the Cg input planes at x. */
static void NN_FN(im2col)(const nn_geom *g, int64_t Cg, const NN_T *x, int64_t r0, int64_t nr, NN_T *col) {
    int nsp = g->nsp, l = nsp - 1;
    int64_t K = 1, Pin = 1, ist[NN_MAX_SP], kk[NN_MAX_SP];
    for (int d = 0; d < nsp; d++) {
        K *= g->k[d];
        Pin *= g->in[d];
    }
    NN_FN(sp_strides)(nsp, g->in, ist);
    int64_t Wo = g->out[l], Wi = g->in[l], sl = g->s[l];
    NN_T *dst = col;
    for (int64_t c = 0; c < Cg; c++) {
        const NN_T *xc = x + c * Pin;
        memset(kk, 0, sizeof kk);
        for (int64_t kidx = 0; kidx < K; kidx++) {
            int64_t base = kk[l] * g->d[l] - g->pb[l]; /* input column of output column 0 */
            int64_t lo = base >= 0 ? 0 : (-base + sl - 1) / sl;
            int64_t hi = Wi - 1 - base >= 0 ? (Wi - 1 - base) / sl + 1 : 0;
            if (hi > Wo) hi = Wo;
            if (lo > hi) lo = hi;
            for (int64_t ro = r0; ro < r0 + nr; ro++, dst += Wo) {
                int64_t rem = ro, off = 0;
                bool ok = true;
                for (int d = l - 1; d >= 0; d--) {
                    int64_t o = rem % g->out[d], ii = o * g->s[d] - g->pb[d] + kk[d] * g->d[d];
                    rem /= g->out[d];
                    if (ii < 0 || ii >= g->in[d]) ok = false;
                    off += ii * ist[d];
                }
                if (!ok || lo == hi) {
                    memset(dst, 0, (size_t)Wo * sizeof(NN_T));
                    continue;
                }
                const NN_T *src = xc + off; /* input column i = o*sl + base, in range for o in [lo,hi) */
                if (lo) memset(dst, 0, (size_t)lo * sizeof(NN_T));
                if (sl == 1) memcpy(dst + lo, src + base + lo, (size_t)(hi - lo) * sizeof(NN_T));
                else
                    for (int64_t o = lo; o < hi; o++) dst[o] = src[o * sl + base];
                if (hi < Wo) memset(dst + hi, 0, (size_t)(Wo - hi) * sizeof(NN_T));
            }
            for (int d = l; d >= 0; d--) {
                if (++kk[d] < g->k[d]) break;
                kk[d] = 0;
            }
        }
    }
}

/* img[rows, out] += col[rows*K, positions [r0*Win, (r0+nr)*Win) of the input grid g->in]: the
 * inverse of im2col with g->in and g->out swapped in role (position o = i*s - pb + kk*d). */
static void NN_FN(col2im_rows)(const nn_geom *g, int64_t rows, const NN_T *col, int64_t r0, int64_t nr,
                               NN_T *img) {
    int nsp = g->nsp, l = nsp - 1;
    int64_t K = 1, Pout = 1, ost[NN_MAX_SP], kk[NN_MAX_SP];
    for (int d = 0; d < nsp; d++) {
        K *= g->k[d];
        Pout *= g->out[d];
    }
    NN_FN(sp_strides)(nsp, g->out, ost);
    int64_t Wi = g->in[l], Wo = g->out[l], sl = g->s[l];
    const NN_T *src = col;
    for (int64_t m = 0; m < rows; m++) {
        NN_T *im = img + m * Pout;
        memset(kk, 0, sizeof kk);
        for (int64_t kidx = 0; kidx < K; kidx++) {
            int64_t base = kk[l] * g->d[l] - g->pb[l]; /* output column of input column 0 */
            for (int64_t ri = r0; ri < r0 + nr; ri++, src += Wi) {
                int64_t rem = ri, off = 0;
                bool ok = true;
                for (int d = l - 1; d >= 0; d--) {
                    int64_t i = rem % g->in[d], o = i * g->s[d] - g->pb[d] + kk[d] * g->d[d];
                    rem /= g->in[d];
                    if (o < 0 || o >= g->out[d]) ok = false;
                    off += o * ost[d];
                }
                if (!ok) continue;
                NN_T *dst = im + off;
                for (int64_t i = 0; i < Wi; i++) {
                    int64_t o = i * sl + base;
                    if (o >= 0 && o < Wo) dst[o] += src[i];
                }
            }
            for (int d = l; d >= 0; d--) {
                if (++kk[d] < g->k[d]) break;
                kk[d] = 0;
            }
        }
    }
}

void NN_FN(nn_col2im)(const nn_geom *g, int64_t rows, const NN_T *col, NN_T *img) {
    int64_t Pin = 1;
    for (int d = 0; d < g->nsp; d++) Pin *= g->in[d];
    if (Pin > 0) NN_FN(col2im_rows)(g, rows, col, 0, Pin / g->in[g->nsp - 1], img);
}

/* Rows of `rowlen` elements per chunk so that `per_row_elems` * rows stays within the budget. */
static int64_t NN_FN(chunk_rows)(int64_t total_rows, int64_t per_row_elems) {
    int64_t cr = NN_COL_BUDGET / per_row_elems;
    if (cr < 1) cr = 1;
    if (cr > total_rows) cr = total_rows;
    return cr;
}

/* y = bias broadcast (a convolution over an empty reduction) */
static bool NN_FN(zero_bias)(int64_t N, int64_t M, int64_t P, const NN_T *bias, NN_T *y) {
    for (int64_t nm = 0; nm < N * M; nm++)
        for (int64_t p = 0; p < P; p++) y[nm * P + p] = bias ? bias[nm % M] : 0;
    return true;
}

bool NN_FN(nn_conv)(const nn_geom *g, int64_t N, int64_t C, int64_t M, int64_t group, const NN_T *x,
                    const NN_T *w, const NN_T *bias, NN_T *y) {
    int nsp = g->nsp;
    int64_t K = 1, Pin = 1, P = 1;
    bool direct = true;
    for (int d = 0; d < nsp; d++) {
        K *= g->k[d];
        Pin *= g->in[d];
        P *= g->out[d];
        if (g->k[d] != 1 || g->s[d] != 1 || g->pb[d] != 0 || g->pe[d] != 0) direct = false;
    }
    int64_t Cg = C / group, Mg = M / group, Kd = Cg * K;
    if (P == 0 || N == 0 || M == 0) return true;
    int64_t Wo = g->out[nsp - 1], R = P / Wo, cr = 0;
    NN_T *col = NULL;
    if (!direct) {
        int64_t row, bytes;
        if (!lt_mul_i64(Kd, Wo, &row) || row == 0) return row == 0 ? NN_FN(zero_bias)(N, M, P, bias, y) : false;
        cr = NN_FN(chunk_rows)(R, row);
        if (!lt_mul_i64(row * cr, (int64_t)sizeof(NN_T), &bytes) || bytes > LT_TENSOR_MAX_BYTES) return false;
        col = lt_mem_alloc((size_t)bytes);
        if (!col) return false;
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t gi = 0; gi < group; gi++) {
            const NN_T *xg = x + (n * C + gi * Cg) * Pin, *wg = w + gi * Mg * Kd;
            NN_T *yg = y + (n * M + gi * Mg) * P;
            if (direct) {
                NN_FN(nn_gemm)(Mg, P, Cg, wg, Kd, 1, xg, Pin, yg, P, false);
            } else {
                for (int64_t r0 = 0; r0 < R; r0 += cr) {
                    int64_t nr = R - r0 < cr ? R - r0 : cr, np = nr * Wo;
                    NN_FN(im2col)(g, Cg, xg, r0, nr, col);
                    NN_FN(nn_gemm)(Mg, np, Kd, wg, Kd, 1, col, np, yg + r0 * Wo, P, false);
                }
            }
            if (bias)
                for (int64_t m = 0; m < Mg; m++) {
                    NN_T b = bias[gi * Mg + m], *row = yg + m * P;
                    for (int64_t p = 0; p < P; p++) row[p] += b;
                }
        }
    lt_mem_free(col);
    return true;
}

bool NN_FN(nn_convt)(const nn_geom *g, int64_t N, int64_t C, int64_t M, int64_t group, const NN_T *x,
                     const NN_T *w, const NN_T *bias, NN_T *y) {
    int nsp = g->nsp;
    int64_t K = 1, Pin = 1, P = 1;
    for (int d = 0; d < nsp; d++) {
        K *= g->k[d];
        Pin *= g->in[d];
        P *= g->out[d];
    }
    int64_t Cg = C / group, Mg = M / group, Rk = Mg * K;
    int64_t total;
    if (lt_mul_i64(N * M, P, &total)) memset(y, 0, (size_t)total * sizeof(NN_T));
    if (P == 0 || N == 0 || M == 0) return true;
    if (Pin > 0 && Rk > 0) {
        int64_t Wi = g->in[nsp - 1], R = Pin / Wi, row, bytes;
        if (!lt_mul_i64(Rk, Wi, &row)) return false;
        int64_t cr = NN_FN(chunk_rows)(R, row);
        if (!lt_mul_i64(row * cr, (int64_t)sizeof(NN_T), &bytes) || bytes > LT_TENSOR_MAX_BYTES) return false;
        NN_T *col = lt_mem_alloc((size_t)bytes);
        if (!col) return false;
        for (int64_t n = 0; n < N; n++)
            for (int64_t gi = 0; gi < group; gi++) {
                const NN_T *xg = x + (n * C + gi * Cg) * Pin, *wg = w + gi * Cg * Rk;
                NN_T *yg = y + (n * M + gi * Mg) * P;
                for (int64_t r0 = 0; r0 < R; r0 += cr) {
                    int64_t nr = R - r0 < cr ? R - r0 : cr, np = nr * Wi;
                    /* col[(m,kk), p] = sum_c w[c, m, kk] * x[c, p] */
                    NN_FN(nn_gemm)(Rk, np, Cg, wg, 1, Rk, xg + r0 * Wi, Pin, col, np, false);
                    /* col2im_rows reads col as [rows*K][nr*Wi]: rows m, then kk, then positions */
                    NN_FN(col2im_rows)(g, Mg, col, r0, nr, yg);
                }
            }
        lt_mem_free(col);
    }
    if (bias)
        for (int64_t n = 0; n < N; n++)
            for (int64_t m = 0; m < M; m++) {
                NN_T b = bias[m], *row = y + (n * M + m) * P;
                for (int64_t p = 0; p < P; p++) row[p] += b;
            }
    return true;
}

#undef NN_NR
#undef NN_KB
#undef NN_MB
#undef NN_COL_BUDGET
