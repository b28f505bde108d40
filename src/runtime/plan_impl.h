/* plan_impl.h — the runtime's private view of a plan: the struct behind lt_plan and the helpers
 * shared by plan.c (build, run, accessors), host.c (host steps through the eval hooks),
 * plan_device.c (plans on a backend whose memory is not host memory) and export.c (standalone C).
 * Nothing outside src/runtime includes it.
 */
#ifndef LT_PLAN_IMPL_H
#define LT_PLAN_IMPL_H

#include "plan.h"

#include "../ops/shape/index_rule.h"

/* lt_env and lt_interp_subgraph: subgraphs of host steps (If, Loop, Scan) run through the interpreter
 * and read main-graph values through ev->env */
#include "../interp/interp.h"

typedef struct lt_plan_pack {
    int slot;                /* the PACKED slot */
    int src_slot;            /* its CONST source */
    const lt_kernel *kernel; /* the pack kernel (args: packed, source) */
    const lt_bkernel *bk;
    bool shared;             /* the buffer is the caller's (lt_plan_device_share.pack_adopt): given back
                              * with const_release, not freed */
    int same_as;             /* -1, or an earlier pack of the same constant and packing whose buffer
                              * this one reads (neither filled nor freed here) */
} lt_plan_pack;

/* Extra per-slot state. */
typedef struct lt_slot_rt {
    bool is_static;          /* fixed-size dtype and every dim known */
    bool kernel_use;         /* read or written by a compiled kernel: must be a fixed buffer */
    bool host_read;          /* read by a host step (needs a datum view) */
    lt_tensor *wrap;         /* borrowed tensor over ptr, for host steps (static slots) */
    lt_datum *wrapd;         /* datum over wrap (CONST: over the initializer) */
    lt_datum *dflt;          /* INPUT with an initializer: a datum over it (used when not given) */
    lt_datum *cur;           /* run time: INPUT's bound datum, DYNAMIC's value (owned ref) */
    int first_patch, n_patch;/* INPUT / OUTPUT: entries of patches[] to update at each run */
    int mp_index;            /* index in the memory plan's buffer list (WORKSPACE), else -1 */
    int next_alias;          /* next slot viewing the same root (list from the root's first_alias) */
    int first_alias;         /* root: first slot viewing it, -1 */
    void *hptr;              /* device plans: the host copy host steps read and write (CONST: the
                              * initializer; INPUT / OUTPUT: the caller's memory, per run; WORKSPACE
                              * crossing to a host step: its staging buffer); NULL when none */
    void *dptr;              /* lt_plan_run_device: the caller's device memory of an INPUT / OUTPUT
                              * slot during the run, NULL otherwise */
    void *dstage;            /* lt_plan_run_device: the host copy of an INPUT / OUTPUT slot that host
                              * steps or index checks read or host steps write (in dev_staging) */
} lt_slot_rt;

/* Device plans: one copy between a slot's device buffer and its host copy (hptr), made before step
 * `pos` (pos == n_steps: after the last step). */
typedef struct lt_plan_xfer {
    int pos;
    int slot;
    lt_copy_dir dir;         /* LT_COPY_HOST_TO_DEVICE or LT_COPY_DEVICE_TO_HOST */
} lt_plan_xfer;

/* Device plans: a maximal run of kernel steps [first, end) with no host step and no copy inside,
 * captured once as a backend graph (NULL: launched one by one). */
typedef struct lt_plan_segment {
    int first, end;
    int n_launches;          /* kernel steps that launch (views do not) */
    void *graph;             /* instantiated; or, with a slot, the template loaded into it */
    lt_plan_graph_slot *slot;/* the bucket's shared graphs (lt_plan_device_share.graph_slot), or NULL */
    uint64_t id;             /* the template's process-unique id (with a slot) */
} lt_plan_segment;

struct lt_plan {
    const lt_model *model;
    lt_arena *arena;         /* compilation lifetime (heap struct, owned) */
    const lt_groups *groups;
    lt_backend *backend;
    lt_bmodule *module;
    bool shared_module;      /* backend and module borrowed (lt_plan_build_args.shared_module) */
    bool host_memory;        /* the backend's memory is host memory (CPU); else a device plan */
    int threads;

    int n_steps;
    lt_plan_step *steps;
    int n_slots, cap_slots;
    lt_plan_slot *slots;
    lt_slot_rt *rt;
    int *value_slot;         /* main-graph value id -> slot, -1 */
    int *input_slot;         /* graph input i -> slot, -1 */
    int n_api;               /* API inputs (lt_plan_run's order) */
    const char **api_names;
    int *api_cur;            /* API input -> current graph input index, -1 */
    bool *api_frozen;
    int *output_slot;        /* graph output k -> slot, -1 */
    int n_index_checks;      /* compiled Gathers / Scatters whose indices the caller gives (index_checks.c) */
    struct lt_plan_index_check **index_checks;
    int check_slot;          /* the CHECK slot (kernels that check computed indices), -1 when none */

    int n_packs;
    lt_plan_pack *packs;

    void **patches;          /* addresses inside steps' args arrays, grouped per INPUT/OUTPUT slot */
    int n_patches;

    /* host steps: per step, the main-graph values its subgraphs read (outer scope) */
    int **outer_vals;        /* value ids, -1-terminated; NULL when none */
    struct lt_env env;
    lt_plan_rest rest;       /* the DataDependentRest step's runner (lt_plan_set_rest); run NULL: none */
    lt_plan_subgraphs subgraphs; /* the host steps' subgraph runner (lt_plan_set_subgraphs); run NULL: none */

    void *workspace;
    lt_status (*workspace_fn)(void *user, lt_ctx *ctx, int64_t bytes, void **out); /* lt_plan_build_args.workspace */
    void *workspace_user;
    bool workspace_borrowed; /* from workspace_fn: not the plan's to free */
    lt_plan_device_share share; /* lt_plan_build_args.device_share (zero: nothing shared) */
    void **held_consts;         /* the constants' buffers share.const_acquire gave (back at free) */
    int n_held_consts;
    lt_mp_result mem;
    lt_plan_stats stats;
    bool memory_planned;     /* lt_plan_build_memory ran: offsets, workspace, packs, arguments ready */
    uint64_t rng;            /* run time: random ops' state */
    int64_t max_loop_bytes;  /* run time: the host steps' Loop/sequence limit (lt_plan_run_options) */

    /* device plans (plan_device.c) */
    bool use_graphs;         /* replay segments as backend graphs (lt_plan_build_args.no_graphs off) */
    void *dev_consts;        /* constants kernels read, uploaded once (one allocation) */
    void *dev_io;            /* device buffers of kernel-used graph inputs and outputs (one allocation) */
    void *staging;           /* host copies of workspace values crossing to host steps (one allocation) */
    int n_xfers;
    lt_plan_xfer *xfers;     /* sorted by pos */
    int *xfer_first;         /* per position 0..n_steps: first index in xfers (n_steps + 2 entries) */
    int n_segments;
    lt_plan_segment *segments;
    int *segment_at;         /* step -> segment starting there, -1 */
    void *ev_run[2];         /* events around the steps (run option device_seconds) */
    void **ev_steps;         /* 2 per step, made on the first run that times steps */
    bool dev_run;            /* a lt_plan_run_device run is in progress: inputs and outputs are
                              * device memory (rt[].dptr), copied device-to-device */
    void *dev_staging;       /* host copies (rt[].dstage) for device runs, made on the first one */
    bool dev_staging_ready;
    lt_plan_copies copies;   /* the last run's copies (lt_plan_last_copies) */
};

/* index_checks.c: one check per compiled (node, input) pair */
typedef struct lt_plan_index_check {
    int slot;              /* the INPUT slot holding the indices */
    const lt_node *node;   /* the Gather- or Scatter-family node */
    lt_index_rule rule;
} lt_plan_index_check;
/* After the slots exist: one check per compiled Gather- or Scatter-family node whose indices are a
 * model input. */
lt_status lt_plan_index_checks_build(lt_ctx *ctx, lt_plan *p);
/* Before the steps of a run (inputs bound): LT_ERR_INVALID naming the node, input and element of the
 * first index out of range. */
lt_status lt_plan_index_checks_run(lt_ctx *ctx, const lt_plan *p);
/* The CHECK slot that kernel arguments lowered as lt_lowered.status_arg bind to (made on first use). */
int lt_plan_check_slot(lt_ctx *ctx, lt_plan *p);
/* After the memory plan: the check word's buffer, zeroed (on the backend: device memory on a device). */
lt_status lt_plan_check_word_alloc(lt_ctx *ctx, lt_plan *p);
/* After the steps of a run: LT_ERR_INVALID naming the node, element and value a kernel found out of
 * range (when `report`; the word is zeroed again for the next run either way); LT_OK when it is
 * zero or not reported (the run failed already). */
lt_status lt_plan_check_word_run(lt_ctx *ctx, lt_plan *p, bool report);

/* host.c */
/* Prepare host support after slots exist: wrappers for static slots read by host steps, the
 * environment for subgraphs. */
lt_status lt_plan_host_prepare(lt_ctx *ctx, lt_plan *p);
/* Run host step i (its inputs bound, its outputs stored into their slots). */
lt_status lt_plan_host_run(lt_ctx *ctx, lt_plan *p, int i);
/* The datum a host step reads for slot s (borrowed, valid during the run), or NULL. */
lt_datum *lt_plan_slot_datum(lt_plan *p, int s);
/* A datum safe to keep after the run: every borrowed tensor in d copied (d itself released and
 * replaced when anything was copied). */
lt_status lt_plan_detach(lt_ctx *ctx, lt_datum **d);
void lt_plan_host_free(lt_plan *p);
/* The host address of slot sl's data for host steps: its buffer (host-memory plans) or its host copy. */
void *lt_plan_host_addr(const lt_plan *p, int sl);
/* Set each slot's host_read: read by a host step on the host (its inputs but those it reads on the
 * device, step dev_in; the outer values its subgraphs read). After the steps, and again once dev_in
 * is decided (plan_device.c). */
void lt_plan_mark_host_reads(lt_plan *p);

/* plan_device.c (plans whose backend memory is not host memory) */
/* After the memory plan: upload constants, allocate input/output buffers and staging, schedule the
 * copies between device buffers and host copies. */
lt_status lt_plan_device_prepare(lt_ctx *ctx, lt_plan *p);
/* After the argument arrays: segments of kernel steps, each captured once as a graph (if enabled). */
lt_status lt_plan_device_capture(lt_ctx *ctx, lt_plan *p);
/* Run the steps with their copies; ends with one sync. */
lt_status lt_plan_device_run_steps(lt_ctx *ctx, lt_plan *p, const lt_plan_run_options *opt);
/* Does this device run end without its sync (lt_plan_run_options.no_sync, honoured)? */
bool lt_plan_device_queued(const lt_plan *p, const lt_plan_run_options *opt);
void lt_plan_device_free(lt_plan *p);
/* lt_plan_run_device: the host copies of the INPUT / OUTPUT slots host steps or index checks touch
 * (made once, kept); a copy between host and device counted in p->copies. */
lt_status lt_plan_device_run_staging(lt_ctx *ctx, lt_plan *p);
lt_status lt_plan_device_copy(lt_ctx *ctx, lt_plan *p, void *dst, const void *src, int64_t bytes, lt_copy_dir dir,
                              bool async);

#endif
