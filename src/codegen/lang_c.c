/* lang_c.c — the C target table for the shared emitter (see lang.h): the base table itself
 * (lang_base.h, where the C entries are written and explained), from which the other targets derive. */
#include "lang_base.h"

const lt_lang lt_lang_c = {LT_LANG_BASE};
