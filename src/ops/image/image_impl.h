/* image_impl.h — private declarations shared by the image family's files (image.c,
 * image_resize.c, image_sample.c, image_signal.c, image_decode.c). Not part of any public contract:
 * only the family table lt_ops_image[] (image.c) is exported to the rest of lathe.
 */
#ifndef LT_IMAGE_IMPL_H
#define LT_IMAGE_IMPL_H

#include "../ops.h"

/* ---- hooks, one pair per op (defined in the file named) ---- */
/* image_resize.c */
lt_status lt_img_resize_infer(lt_infer *ic, lt_node *n);
lt_status lt_img_resize_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_img_upsample_infer(lt_infer *ic, lt_node *n);
lt_status lt_img_upsample_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
/* image_sample.c */
lt_status lt_img_gridsample_infer(lt_infer *ic, lt_node *n);
lt_status lt_img_gridsample_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_img_affinegrid_infer(lt_infer *ic, lt_node *n);
lt_status lt_img_affinegrid_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
/* image_roi.c */
lt_status lt_img_roialign_infer(lt_infer *ic, lt_node *n);
lt_status lt_img_roialign_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_img_maxroipool_infer(lt_infer *ic, lt_node *n);
lt_status lt_img_maxroipool_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_img_nms_infer(lt_infer *ic, lt_node *n);
lt_status lt_img_nms_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
/* image_signal.c */
lt_status lt_img_dft_infer(lt_infer *ic, lt_node *n);
lt_status lt_img_dft_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_img_stft_infer(lt_infer *ic, lt_node *n);
lt_status lt_img_stft_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_img_window_infer(lt_infer *ic, lt_node *n);
lt_status lt_img_window_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_img_mel_infer(lt_infer *ic, lt_node *n);
lt_status lt_img_mel_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
/* image_decode.c */
lt_status lt_img_decoder_infer(lt_infer *ic, lt_node *n);
lt_status lt_img_decoder_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);

/* ---- helpers (image.c) ---- */
/* Store v into element i the way numpy's saturate_cast does (onnx reference outputs): integers
 * round half to even and clamp to the type's range; floats clamp to +-the largest finite value
 * (NaN stays NaN); bool is v != 0. */
void lt_img_store_sat(void *data, lt_dtype dt, int64_t i, double v);
/* Whether a dtype can go through double arithmetic (float, signed/unsigned int; not bool, string,
 * complex). */
bool lt_img_numeric(lt_dtype dt);
/* Read the single element of a scalar or 1-element tensor as int64 (integer dtypes) or double. */
lt_status lt_img_scalar_i64(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *what,
                            int64_t *out);
lt_status lt_img_scalar_f64(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *what,
                            double *out);
/* Same for infer: a constant input's single integer value; false if not constant or not 1 element. */
bool lt_img_const_i64(const lt_node *n, int i, int64_t *out);
/* Type of input i when it is a tensor of known rank, else NULL. */
const lt_type *lt_img_ranked(const lt_node *n, int i);

#endif
