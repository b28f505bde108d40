/* misc_impl.h — private to the misc family (misc*.c): the regex engine used by RegexFullMatch and
 * the hooks the family's extra files export to the table in misc.c.
 *
 * Regex: RE2 syntax (the subset ONNX models use: literals, ., classes with ranges, Perl classes
 * \d \w \s and negations, POSIX [:name:] classes, groups (capturing, (?:...)), alternation,
 * * + ? {n} {n,} {n,m} (greedy or lazy), anchors ^ $ \A \z \b \B, (?i) flags). Compiled to an NFA
 * program and run as a Pike VM over UTF-8 code points: time linear in the text times the program
 * size, no backtracking, so no input can make it hang. Counted repetition is capped at 1000 like
 * RE2, and the program size at LT_REGEX_MAX_INST.
 */
#ifndef LT_MISC_IMPL_H
#define LT_MISC_IMPL_H

#include "../ops.h"

#define LT_REGEX_MAX_INST 200000

typedef struct lt_regex lt_regex;
/* Compile; on a syntax error returns LT_ERR_INVALID with a message naming the offset. */
lt_status lt_regex_compile(lt_ctx *ctx, const char *pattern, size_t len, lt_regex **out);
/* 1: the whole of s matches, 0: it does not, -1: out of memory. */
int lt_regex_full_match(const lt_regex *re, const char *s, size_t len);
void lt_regex_free(lt_regex *re);

/* ---- hooks defined in misc_train.c (random and training ops) ---- */
lt_status lt_misc_infer_random(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_random(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_bernoulli(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_bernoulli(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_multinomial(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_multinomial(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_optimizer(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_optimizer(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);

/* ---- hooks defined in misc_ml.c (ai.onnx.ml) ---- */
lt_status lt_misc_infer_tree(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_tree(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_scaler(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_scaler(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_eval_normalizer(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_imputer(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_imputer(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_linreg(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_linreg(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_linclass(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_linclass(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_onehot(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_onehot(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_featvec(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_featvec(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_catmap(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_catmap(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);

/* ---- hooks defined in misc_ml_svm_tree.c (ai.onnx.ml) ---- */
lt_status lt_misc_infer_tree_legacy(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_tree_legacy(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_svm(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_svm(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_zipmap(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_zipmap(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_dictvec(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_dictvec(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_misc_infer_castmap(lt_infer *ic, lt_node *n);
lt_status lt_misc_eval_castmap(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);

/* Post transforms shared by the ml classifiers/regressors (scores of one row, in place). */
typedef enum lt_post { LT_POST_NONE, LT_POST_SOFTMAX, LT_POST_LOGISTIC, LT_POST_SOFTMAX_ZERO, LT_POST_PROBIT } lt_post;
bool lt_misc_post_parse(const char *s, lt_post *out);
void lt_misc_post_apply(lt_post p, double *v, int64_t n);

#endif
