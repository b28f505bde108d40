/* loop_scan.c — the loop analysis behind the emitters' pragmas (loop_scan.h). */
#include "loop_scan.h"

#include <string.h>


static bool load_conflicts(const lt_lnode *n, const lt_lbuf *b, const lt_lnode *idx) {
    if (!n) return false;
    if ((n->kind == LT_L_LOAD || n->kind == LT_L_ADDR) && n->buf == b && !lt_lequal(lt_lload_index(n), idx)) return true;
    for (int i = 0; i < n->n; i++)
        if (load_conflicts(n->kids[i], b, idx)) return true;
    return false;
}

static bool uses_dep(const lt_lnode *n, const bool *dep) {
    if (!n) return false;
    if (n->kind == LT_L_VAR && n->var && dep[n->var->id]) return true;
    for (int i = 0; i < n->n; i++)
        if (uses_dep(n->kids[i], dep)) return true;
    return false;
}

static void scan_rec(loop_scan *s, const lt_lnode *n, const lt_lnode *root) {
    if (!n) return;
    switch (n->kind) {
    case LT_L_FOR: s->nested = true; if (n->var) s->inner[n->var->id] = true; break;
    case LT_L_LET:
        if (n->var) s->inner[n->var->id] = true;
        if (n->var && uses_dep(lt_llet_value(n), s->dep)) s->dep[n->var->id] = true; /* t = i % 56 */
        break;
    case LT_L_CALL: s->call = true; break;
    case LT_L_STORE:
        if (!uses_dep(lt_lstore_index(n), s->dep)) s->store_invariant = true;
        if (load_conflicts(root, n->buf, lt_lstore_index(n))) s->dependence = true;
        break;
    case LT_L_ASSIGN:
        if (n->var && s->inner[n->var->id] && uses_dep(lt_llet_value(n), s->dep)) s->dep[n->var->id] = true;
        if (n->var && !s->inner[n->var->id]) {
            const char *red = NULL;
            const lt_lnode *x = lt_llet_value(n);
            if (x->kind == LT_L_BINARY && (x->op == LT_LOP_ADD || x->op == LT_LOP_MUL) &&
                ((lt_lexpr_a(x)->kind == LT_L_VAR && lt_lexpr_a(x)->var == n->var &&
                  !lt_luses_var(lt_lexpr_b(x), n->var)) ||
                 (lt_lexpr_b(x)->kind == LT_L_VAR && lt_lexpr_b(x)->var == n->var &&
                  !lt_luses_var(lt_lexpr_a(x), n->var))))
                red = x->op == LT_LOP_ADD ? "+" : "*";
            int i = 0;
            while (i < s->n_outer && s->outer[i] != n->var) i++;
            if (i == s->n_outer && i < 8) {
                s->outer[i] = n->var;
                s->red_op[i] = red;
                s->n_outer++;
            } else if (i < 8 && s->red_op[i] != red) {
                s->red_op[i] = NULL;
            } else if (i == 8) {
                s->dependence = true;
            }
        }
        break;
    default: break;
    }
    for (int i = 0; i < n->n; i++) scan_rec(s, n->kids[i], root);
}

static int count_refs(const lt_lnode *n, const lt_lvar *v, lt_lkind kind) {
    if (!n) return 0;
    int c = n->kind == kind && n->var == v;
    for (int i = 0; i < n->n; i++) c += count_refs(n->kids[i], v, kind);
    return c;
}

bool lt_loop_scan(int n_vars, const lt_lnode *loop, loop_scan *s) {
    memset(s, 0, sizeof *s);
    s->v = loop->var;
    s->inner = lt_mem_calloc(2 * ((size_t)n_vars + 1), sizeof *s->inner);
    if (!s->inner) return false;
    s->dep = s->inner + n_vars + 1;
    s->dep[loop->var->id] = true;
    scan_rec(s, lt_lfor_body(loop), lt_lfor_body(loop));
    /* a reduction variable may be read only by its own updates */
    for (int i = 0; i < s->n_outer; i++)
        if (s->red_op[i] && count_refs(lt_lfor_body(loop), s->outer[i], LT_L_VAR) !=
                                count_refs(lt_lfor_body(loop), s->outer[i], LT_L_ASSIGN))
            s->red_op[i] = NULL;
    lt_mem_free(s->inner);
    s->inner = s->dep = NULL;
    return true;
}
