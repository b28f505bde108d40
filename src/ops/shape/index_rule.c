/* index_rule.c — the range rule of the Gather and Scatter families' indices, and the Scatter
 * reduction (see index_rule.h). */
#include "index_rule.h"

#include <string.h>

bool lt_index_rule_of(const lt_node *n, lt_index_rule *r) {
    int op = n->op;
    if (op != LT_OP_Gather && op != LT_OP_GatherElements && op != LT_OP_GatherND && op != LT_OP_Scatter &&
        op != LT_OP_ScatterElements && op != LT_OP_ScatterND)
        return false;
    if (n->n_in < 2 || !n->in[0] || !n->in[1]) return false;
    const lt_type *dt = &n->in[0]->type, *it = &n->in[1]->type;
    if (dt->rank < 0 || !dt->dims) return false;
    int rank = dt->rank;
    if (op == LT_OP_GatherND || op == LT_OP_ScatterND) {
        if (it->rank < 1 || !it->dims) return false;
        int64_t b = op == LT_OP_GatherND ? lt_attr_int(n, "batch_dims", 0) : 0, k = it->dims[it->rank - 1].value;
        if (b < 0 || b >= it->rank || k < 1 || b + k > rank) return false;
        r->k = (int)k;
        for (int j = 0; j < r->k; j++) r->dims[j] = dt->dims[b + j].value;
    } else {
        int64_t ax = lt_attr_int(n, "axis", 0);
        if (ax < -rank || ax >= rank) return false;
        r->k = 1;
        r->dims[0] = dt->dims[ax < 0 ? ax + rank : ax].value;
    }
    for (int j = 0; j < r->k; j++)
        if (r->dims[j] < 0) return false;
    return true;
}

int64_t lt_index_rule_violation(const lt_index_rule *r, const void *data, lt_dtype dt, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        int64_t v = lt_load_i64(data, dt, i), d = r->dims[i % r->k];
        if (v < -d || v >= d) return i;
    }
    return -1;
}

const lt_value *lt_index_model_input(const lt_value *v) {
    while (v && !v->init) {
        if (!v->producer) return v->is_input && !v->outer ? v : NULL;
        const lt_node *p = v->producer;
        int op = p->op;
        if (op != LT_OP_Reshape && op != LT_OP_Flatten && op != LT_OP_Squeeze && op != LT_OP_Unsqueeze &&
            op != LT_OP_Identity)
            return NULL;
        v = p->in[0];
    }
    return NULL;
}

bool lt_index_checked_in_kernel(const lt_node *n) {
    lt_index_rule rule;
    return n->n_in > 1 && n->in[1] && lt_index_rule_of(n, &rule) && !lt_infer_const(n, 1) &&
           !lt_index_model_input(n->in[1]);
}

bool lt_scatter_reduction(const lt_node *n, lt_scatter_red *r) {
    const char *s = n->opset >= 16 ? lt_attr_string(n, "reduction", "none") : "none";
    if (strcmp(s, "none") == 0) *r = LT_SCATTER_NONE;
    else if (strcmp(s, "add") == 0) *r = LT_SCATTER_ADD;
    else if (strcmp(s, "mul") == 0) *r = LT_SCATTER_MUL;
    else if (strcmp(s, "max") == 0 && n->opset >= 18) *r = LT_SCATTER_MAX;
    else if (strcmp(s, "min") == 0 && n->opset >= 18) *r = LT_SCATTER_MIN;
    else return false;
    return true;
}
