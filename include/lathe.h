/* lathe.h — the public C API of lathe, a deep-learning compiler for ONNX models. This header is its
 * own manual: read the tutorial, then the reference below it.
 *
 * ---- Tutorial --------------------------------------------------------------------------------------
 *
 *     #include <lathe.h>
 *
 *     char err[1024];
 *     lathe_model *model = NULL;
 *     if (lathe_model_load("squeezenet.onnx", NULL, &model, err, sizeof err) != LATHE_OK) {
 *         fprintf(stderr, "%s\n", err);            // names the file, byte offset and field at fault
 *         return 1;
 *     }
 *     // The model's inputs are the graph inputs you must provide (those with an initializer are not
 *     // listed: their stored value is used). Ask for their names, types and shapes:
 *     int64_t dims[8];
 *     int rank = lathe_model_input_shape(model, 0, dims, 8);  // -1 in dims[k]: symbolic / unknown
 *     printf("%s: %s, rank %d\n", lathe_model_input_name(model, 0),
 *            lathe_dtype_name(lathe_model_input_dtype(model, 0)), rank);
 *
 *     // Make an input tensor (zeroed) and fill it through its data pointer.
 *     int64_t shape[4] = {1, 3, 224, 224};
 *     lathe_tensor *x = NULL;
 *     lathe_tensor_create(LATHE_FLOAT, 4, shape, &x);
 *     float *px = lathe_tensor_data(x);
 *     for (int64_t i = 0; i < lathe_tensor_numel(x); i++) px[i] = 0.5f;
 *
 *     // Run. Outputs come back as new tensors that you own.
 *     lathe_tensor *y = NULL;
 *     if (lathe_run(model, (const lathe_tensor *const[]){x}, 1, &y, 1) != LATHE_OK)
 *         fprintf(stderr, "%s\n", lathe_model_error(model));
 *     else
 *         printf("first value %g\n", ((const float *)lathe_tensor_data(y))[0]);
 *
 *     lathe_tensor_free(x);
 *     lathe_tensor_free(y);
 *     lathe_model_free(model);
 *
 * ---- Compiling ------------------------------------------------------------------------------------
 *
 * lathe_run interprets the model node by node. To run it fast, compile it once for fixed input
 * shapes (declared in the model, or bound with the load options' shapes / dims) into machine code
 * for this CPU, then run it as often as you like:
 *
 *     lathe_compile_options co = {0};                // defaults: -O3, the "cpu" backend, all threads
 *     co.cache_dir = "/home/me/.cache/lathe";         // compiled code is cached here (optional)
 *     lathe_compiled *c = NULL;
 *     if (lathe_compile("squeezenet.onnx", NULL, &co, &c, err, sizeof err) != LATHE_OK) {
 *         fprintf(stderr, "%s\n", err);
 *         return 1;
 *     }
 *     lathe_tensor *y = NULL;
 *     if (lathe_compiled_run(c, (const lathe_tensor *const[]){x}, 1, &y, 1) != LATHE_OK)
 *         fprintf(stderr, "%s\n", lathe_compiled_error(c));
 *     lathe_tensor_free(y);
 *     lathe_compiled_free(c);
 *
 * Compiling runs the graph passes, fuses nodes into kernels, generates C and builds it with the
 * system C compiler (cc, or co.cc): seconds the first time, a cache hit after that. Operators the
 * compiler cannot take (dynamic shapes, strings, control flow) run through the interpreter inside
 * the compiled plan, so every model lathe_run runs also compiles. lathe_compiled_run_buffers runs on
 * memory you own without allocating anything; a model compiled for the GPU (backend "cuda") also runs
 * on GPU memory you own, with no copy through the host (lathe_compiled_run_device).
 *
 * Link with the shared library (-llathe), or with the static one plus what it was built with:
 * -llathe -lz -lm -lpthread -ldl, and -ljpeg when CMake found libjpeg.
 *
 * ---- Rules -----------------------------------------------------------------------------------------
 *
 * Status codes: every fallible call returns a lathe_status; LATHE_OK is 0. Out-parameters are written
 *   only on success. A message explains every failure: in errbuf for lathe_model_load*, and in
 *   lathe_model_error(model) for lathe_run.
 * Ownership: you free what a lathe_*_create / lathe_*_load / lathe_compile / lathe_*run call hands
 *   you (with lathe_tensor_free / lathe_model_free / lathe_compiled_free; all accept NULL). Strings returned by getters belong to
 *   the object they came from and live as long as it does. lathe_run never takes ownership of inputs.
 * Tensors: dense, row-major, C order. The element layout of each dtype is given at lathe_dtype.
 * Threads: different models may be used from different threads at once; one model (or compiled
 *   model) must be used by one thread at a time (a run keeps its last error on the handle). A compiled
 *   model's kernels use several threads inside (lathe_compile_options.threads). Tensors are plain data.
 * Safety: nothing a model file or an input does can crash the process or read out of bounds: bad data
 *   is a LATHE_ERR_INVALID with a message. The library never prints and never reads the environment.
 */
#ifndef LATHE_H
#define LATHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes ---- */
typedef enum lathe_status {
    LATHE_OK = 0,
    LATHE_ERR_USAGE = 1,       /* the API was called wrongly (NULL handle, wrong input count, ...) */
    LATHE_ERR_INVALID = 2,     /* bad model file or bad input data (wrong dtype or shape, ...) */
    LATHE_ERR_UNSUPPORTED = 3, /* valid, but lathe cannot run it (an operator, a dtype) */
    LATHE_ERR_NOMEM = 4,       /* out of memory, or a size limit exceeded */
    LATHE_ERR_IO = 5,          /* the operating system refused a read */
    LATHE_ERR_INTERNAL = 6     /* a bug in lathe: please report it */
} lathe_status;

/* "ok", "invalid", ... (never NULL). */
const char *lathe_status_name(lathe_status s);

/* ---- element types (the ONNX TensorProto.DataType numbers) ----
 * In memory each element takes whole bytes: FLOAT16 and BFLOAT16 are raw uint16_t bits, the FLOAT8
 * types and FLOAT4E2M1 / FLOAT8E8M0 raw uint8_t bits; INT4 / INT2 one int8_t each (sign-extended),
 * UINT4 / UINT2 one uint8_t each; BOOL one byte, 0 or 1; COMPLEX64 / COMPLEX128 (real, imaginary)
 * pairs of float / double; STRING a `char *` per element (NUL-terminated, owned by the tensor: set
 * them with lathe_tensor_set_string). */
typedef enum lathe_dtype {
    LATHE_DTYPE_UNDEFINED = 0,
    LATHE_FLOAT = 1, LATHE_UINT8 = 2, LATHE_INT8 = 3, LATHE_UINT16 = 4, LATHE_INT16 = 5,
    LATHE_INT32 = 6, LATHE_INT64 = 7, LATHE_STRING = 8, LATHE_BOOL = 9, LATHE_FLOAT16 = 10,
    LATHE_DOUBLE = 11, LATHE_UINT32 = 12, LATHE_UINT64 = 13, LATHE_COMPLEX64 = 14,
    LATHE_COMPLEX128 = 15, LATHE_BFLOAT16 = 16, LATHE_FLOAT8E4M3FN = 17, LATHE_FLOAT8E4M3FNUZ = 18,
    LATHE_FLOAT8E5M2 = 19, LATHE_FLOAT8E5M2FNUZ = 20, LATHE_UINT4 = 21, LATHE_INT4 = 22,
    LATHE_FLOAT4E2M1 = 23, LATHE_FLOAT8E8M0 = 24, LATHE_UINT2 = 25, LATHE_INT2 = 26
} lathe_dtype;

/* ONNX spelling ("float", "int64", ...; "undefined" for unknown values). Never NULL. */
const char *lathe_dtype_name(lathe_dtype dt);
/* Bytes per element in memory (0 for UNDEFINED / unknown values). */
size_t lathe_dtype_size(lathe_dtype dt);

/* The library version, "MAJOR.MINOR.PATCH". */
const char *lathe_version(void);

/* ---- models ---- */
typedef struct lathe_model lathe_model; /* opaque */

/* Load options. Zero-initialize (or pass NULL) for the defaults, then set what you need. */
typedef struct lathe_load_options {
    /* Fix input shapes before inference, in the CLI's --shapes grammar: "x:1x3x224x224,y:4". */
    const char *shapes;
    /* Bind symbolic dims everywhere, in the CLI's --dim grammar, comma-separated: "batch=1,seq=128". */
    const char *dims;
    /* Seed of the random-number operators (RandomNormal, ...). */
    uint64_t seed;
    /* Most bytes a Loop's scan outputs, or one sequence, may hold while the model runs (interpreted,
     * or a host step of a compiled model): past it the run fails with LATHE_ERR_NOMEM naming the node,
     * instead of growing until the machine runs out of memory. 0 = the default (4 GiB). */
    int64_t max_loop_bytes;
} lathe_load_options;

/* Load an ONNX model file. On failure *out is untouched and errbuf (if not NULL) receives the
 * message, truncated to errbuf_size - 1 bytes. Models with operators lathe cannot run still load
 * (inspect them with the getters); lathe_run reports every such operator at once. */
lathe_status lathe_model_load(const char *path, const lathe_load_options *opts, lathe_model **out, char *errbuf,
                              size_t errbuf_size);
/* Same from memory. The bytes are copied: free yours whenever you like. External data (weights in
 * side files) is refused, since there is no folder to look in. */
lathe_status lathe_model_load_memory(const void *data, size_t size, const lathe_load_options *opts,
                                     lathe_model **out, char *errbuf, size_t errbuf_size);
/* Free a model (NULL is fine). Tensors returned by lathe_run stay valid. */
void lathe_model_free(lathe_model *m);
/* Message of the last failed lathe_run on m ("" when none). Owned by m, valid until the next call. */
const char *lathe_model_error(const lathe_model *m);

/* Inputs you must provide (graph inputs without an initializer), and outputs, in graph order.
 * Index out of range (or m NULL): name NULL, dtype LATHE_DTYPE_UNDEFINED, rank -1. */
int lathe_model_num_inputs(const lathe_model *m);
int lathe_model_num_outputs(const lathe_model *m);
const char *lathe_model_input_name(const lathe_model *m, int i);
const char *lathe_model_output_name(const lathe_model *m, int i);
/* Element type (UNDEFINED if unknown or not a tensor: sequences, maps, optionals). */
lathe_dtype lathe_model_input_dtype(const lathe_model *m, int i);
lathe_dtype lathe_model_output_dtype(const lathe_model *m, int i);
/* Returns the rank (-1 if unknown or not a tensor) and writes the first min(rank, max_dims) dims to
 * dims (may be NULL when max_dims is 0): the size, or -1 for a symbolic or unknown dim. */
int lathe_model_input_shape(const lathe_model *m, int i, int64_t *dims, int max_dims);
int lathe_model_output_shape(const lathe_model *m, int i, int64_t *dims, int max_dims);
/* Name of a symbolic dim ("batch"), or NULL when the dim is known or unnamed. */
const char *lathe_model_input_dim_name(const lathe_model *m, int i, int axis);
const char *lathe_model_output_dim_name(const lathe_model *m, int i, int axis);

/* ---- tensors ---- */
typedef struct lathe_tensor lathe_tensor; /* opaque */

#define LATHE_MAX_RANK 16

/* New tensor of the given type and shape with zeroed data (strings: all ""). rank 0 is a scalar;
 * dims may be NULL then. Every dim must be >= 0; the total size must fit in 2^40 bytes. */
lathe_status lathe_tensor_create(lathe_dtype dt, int rank, const int64_t *dims, lathe_tensor **out);
/* Same, then copy numel * lathe_dtype_size(dt) bytes from data (not for STRING: use
 * lathe_tensor_create + lathe_tensor_set_string). */
lathe_status lathe_tensor_create_copy(lathe_dtype dt, int rank, const int64_t *dims, const void *data,
                                      lathe_tensor **out);
void lathe_tensor_free(lathe_tensor *t); /* NULL is fine */
/* The element buffer (row-major; layout per lathe_dtype). Writable; owned by the tensor. Never NULL
 * for a valid tensor, even when it has no elements. */
void *lathe_tensor_data(lathe_tensor *t);
lathe_dtype lathe_tensor_dtype(const lathe_tensor *t);
int lathe_tensor_rank(const lathe_tensor *t);
/* The dims (rank entries), owned by the tensor. */
const int64_t *lathe_tensor_shape(const lathe_tensor *t);
int64_t lathe_tensor_numel(const lathe_tensor *t);
size_t lathe_tensor_nbytes(const lathe_tensor *t);
/* STRING tensors: set element i to a copy of the len bytes at s. */
lathe_status lathe_tensor_set_string(lathe_tensor *t, int64_t i, const char *s, size_t len);

/* ---- running ---- */
/* Run the model on the reference interpreter. inputs[i] binds input i (as listed by
 * lathe_model_input_name); n_inputs must equal lathe_model_num_inputs(m) and n_outputs
 * lathe_model_num_outputs(m). Each input's dtype and shape must match the model's declaration
 * (symbolic dims take the size of the data and must agree between inputs). On success outputs[k]
 * receives a new tensor you free; on failure no output is written and lathe_model_error(m) says why.
 * Outputs that are sequences, maps or optionals are reported as LATHE_ERR_UNSUPPORTED. */
lathe_status lathe_run(lathe_model *m, const lathe_tensor *const *inputs, int n_inputs, lathe_tensor **outputs,
                       int n_outputs);

/* ---- compiled models ---- */
typedef struct lathe_compiled lathe_compiled; /* opaque: a model compiled for fixed input shapes */

/* Compile options. Zero-initialize (or pass NULL) for the defaults. */
typedef struct lathe_compile_options {
    /* Optimization level: 0 = the default (3); 1, 2, 3 = -O1..-O3; -1 = -O0 (no graph passes, one
     * kernel per node). */
    int opt_level;
    /* Backend: NULL = "cpu"; "cuda" compiles for the GPU (LATHE_ERR_UNSUPPORTED without one). */
    const char *backend;
    /* Threads of the parallel loops: 0 = every CPU (the OpenMP default). */
    int threads;
    /* Folder of the compiled-code cache (created 0700 if missing); NULL = no cache (a temporary
     * folder, removed after loading). A folder owned by another user or writable by group or others
     * is refused (LATHE_ERR_IO): compiled code is loaded only from a folder only you can write, each
     * file checked against the manifest written when it was built. The library never reads the
     * environment: the CLI's default is $XDG_CACHE_HOME/lathe or ~/.cache/lathe. */
    const char *cache_dir;
    /* C compiler command: NULL = "cc" (words split on spaces, e.g. "ccache gcc"). */
    const char *cc;
    /* Folder to write the generated C, the loop IR and the plan into (NULL: none). */
    const char *dump_code_dir;
    /* Backend "cuda": the NVRTC library tried before libnvrtc.so.13 and .12 (NULL: only those; the
     * CLI and the Python binding pass $LATHE_NVRTC). The plan then runs on the GPU: weights
     * uploaded once, inputs and outputs copied per run, kernels replayed as a CUDA graph. */
    const char *nvrtc;
    /* Graph passes that are off by default to run too, comma-separated (e.g. "layout_nchwc": CPU
     * convolutions in the channel-blocked layout); NULL = none. An unknown name is LATHE_ERR_USAGE
     * (the message lists the passes). */
    const char *enable_passes;
    /* A tuning database file (`lathe tune` writes one): the CPU kernels it holds schedules for, for
     * this CPU and thread count, take them instead of the default ones, and a model it timed faster
     * in the channel-blocked layout is compiled in that layout (the report says so). NULL = the default
     * schedules (the library reads no file unless told; the CLI and Python default to tune.tsv in the
     * cache folder when it exists). A file that does not exist or does not parse is LATHE_ERR_INVALID. */
    const char *tune_db;
    /* Seconds one C compiler run may take: 0 = the default (300), negative = no limit. Past it the
     * compiler and its children are killed and the compile fails (LATHE_ERR_IO, naming the compiler
     * and the limit). */
    double cc_timeout;
    /* Nonzero: ops whose output size depends on the data (NonZero, NonMaxSuppression, Unique, TopK
     * with a run-time k, Compress, a Loop's scan outputs) and every node after them run on the host,
     * through the interpreter. 0 (the default): the graph is split there, NonZero / TopK / Compress
     * run as kernels, and the nodes after them are compiled at run time for the sizes each run's data
     * gives, once per bucket of sizes (the report's "data-dependent sizes" line; the CLI's --no-split). */
    int no_split;
} lathe_compile_options;

/* Load and compile an ONNX model file for the shapes its inputs have after `load` (declared dims,
 * load->shapes, load->dims). When an input dim stays symbolic, the result is compiled for every
 * shape: each new input shape is compiled by lathe_compiled_run when first met (the host pipeline,
 * milliseconds), and shapes of one bucket share one built module, so the C compiler runs once per
 * bucket; load->dims may give ranges ("seq=1..4096") that runs must keep to; the report lists the
 * buckets; lathe_compiled_run_buffers needs bound shapes. Graph inputs with an initializer are
 * compiled as constants (not inputs). On failure *out is untouched and errbuf gets the message
 * (naming the input, node, generated file or compiler message at fault). */
lathe_status lathe_compile(const char *path, const lathe_load_options *load, const lathe_compile_options *opts,
                           lathe_compiled **out, char *errbuf, size_t errbuf_size);
void lathe_compiled_free(lathe_compiled *c); /* NULL is fine */
/* Message of the last failed run ("" when none). Owned by c, valid until the next call. */
const char *lathe_compiled_error(const lathe_compiled *c);
/* The compile report: stage times, kernels, host steps, cache hit, memory plan (owned by c, valid
 * until the next call on c; a split model's report ends with what its rest compiled so far). */
const char *lathe_compiled_report(const lathe_compiled *c);

/* Inputs (those without an initializer) and outputs, in graph order, with their compiled types.
 * Out of range: name NULL, dtype UNDEFINED, rank -1 (dims untouched). Shapes are concrete, except
 * outputs computed with a dynamic shape (then -1 where unknown). */
int lathe_compiled_num_inputs(const lathe_compiled *c);
int lathe_compiled_num_outputs(const lathe_compiled *c);
const char *lathe_compiled_input_name(const lathe_compiled *c, int i);
const char *lathe_compiled_output_name(const lathe_compiled *c, int i);
lathe_dtype lathe_compiled_input_dtype(const lathe_compiled *c, int i);
lathe_dtype lathe_compiled_output_dtype(const lathe_compiled *c, int i);
int lathe_compiled_input_shape(const lathe_compiled *c, int i, int64_t *dims, int max_dims);
int lathe_compiled_output_shape(const lathe_compiled *c, int i, int64_t *dims, int max_dims);

/* Run as lathe_run does; each input must have exactly the compiled dtype and shape. */
lathe_status lathe_compiled_run(lathe_compiled *c, const lathe_tensor *const *inputs, int n_inputs,
                                lathe_tensor **outputs, int n_outputs);
/* Run on your memory, allocating nothing for compiled kernels: inputs[i] points at input i's data
 * (compiled dtype and shape, row-major), outputs[k] at lathe_compiled_output_bytes(c, k) bytes.
 * LATHE_ERR_UNSUPPORTED when an output's shape is only known at run time (use lathe_compiled_run).
 * A model compiled for every shape (symbolic dims left unbound) runs at the input shapes selected
 * last (lathe_compiled_select_shapes, or the last lathe_compiled_run's). */
lathe_status lathe_compiled_run_buffers(lathe_compiled *c, const void *const *inputs, int n_inputs,
                                        void *const *outputs, int n_outputs);
/* The input shapes the next lathe_compiled_run_buffers / lathe_compiled_run_device runs at (ranks[i],
 * dims[i][0..ranks[i]) for input i), for a model compiled for every shape: its plan for them is taken
 * (compiled now if new: the host pipeline, and the C compiler or NVRTC only for a new bucket), and
 * lathe_compiled_output_shape / lathe_compiled_output_bytes then give the outputs at those shapes.
 * The buffers a run is given must be of those shapes. For a model compiled for fixed shapes the
 * shapes must be those (LATHE_ERR_INVALID naming the input otherwise). A shape outside a range is
 * LATHE_ERR_USAGE naming the input and dim. */
lathe_status lathe_compiled_select_shapes(lathe_compiled *c, int n_inputs, const int *ranks,
                                          const int64_t *const *dims);
/* Bytes of output k (0 when out of range or dynamic). */
size_t lathe_compiled_output_bytes(const lathe_compiled *c, int k);
/* Change the thread count of the parallel loops (0 = every CPU). */
void lathe_compiled_set_threads(lathe_compiled *c, int threads);

/* ---- running on GPU memory (models compiled for backend "cuda") ----
 *
 * lathe_compiled_run and lathe_compiled_run_buffers take host memory: a model compiled for the GPU
 * copies its inputs host->device and its outputs device->host at each run. lathe_compiled_run_device
 * takes GPU memory instead and makes no copy through the host:
 *
 *     void *x, *y;   // device memory: cudaMalloc, torch.Tensor.data_ptr(), CuPy, or lathe_device_alloc
 *     lathe_device_alloc(dev, lathe_compiled_output_bytes(c, 0), &y);
 *     lathe_compiled_run_device(c, (const void *const[]){x}, 1, (void *const[]){y}, 1, NULL);
 *
 * inputs[i] points at input i's data (compiled dtype and shape, row-major) and outputs[k] at
 * lathe_compiled_output_bytes(c, k) bytes (shape: lathe_compiled_output_shape), all CUDA device
 * memory of the device the model runs on (device 0; choose the GPU with CUDA_VISIBLE_DEVICES),
 * allocated in its primary context: the context the CUDA runtime, PyTorch, CuPy and lathe share, so
 * cudaMalloc'ed memory and PyTorch's or CuPy's CUDA tensors work as they are. The inputs are copied
 * device to device into the model's own input buffers and the outputs out of its output buffers (the
 * model's kernels, replayed as one CUDA graph, keep fixed arguments), on lathe's CUDA stream.
 * Host memory is touched only where the model needs it on the host: an input or output of a node
 * with no GPU lowering (it runs on the host: the input is downloaded, the output uploaded; the report
 * lists such host steps), and an input holding indices of a compiled Gather or Scatter (token ids),
 * which is downloaded to check its range before any kernel reads it, so a bad index fails the run
 * with LATHE_ERR_INVALID instead of faulting the GPU. lathe_compiled_last_run_copies counts the
 * copies a run made.
 * Order: stream is the CUstream (a cudaStream_t) whose work wrote the inputs: the run waits for the
 * work queued on it before the call (through an event, not blocking the host); NULL waits for all
 * work on the device to finish first (cuCtxSynchronize): right whatever stream wrote them, a little
 * slower. The call returns when the outputs are written (one sync at the end, as every run), so the
 * caller may read them on any stream at once.
 * Checks: every pointer must be device (or managed) memory of that device and context, and the
 * bytes from it must lie inside its allocation (asked of the driver): otherwise LATHE_ERR_USAGE
 * naming the input or output (host memory, another GPU, NULL). NULL is accepted only for an input or
 * output of zero bytes. LATHE_ERR_UNSUPPORTED for a model compiled for the CPU ("cpu": its memory is
 * host memory), for a model compiled for every shape (symbolic dims left unbound) before its input
 * shapes are selected (lathe_compiled_select_shapes: pointers do not say the shapes), and when an
 * output's shape is only known at run time (use lathe_compiled_run). The error is in lathe_compiled_error(c). */
lathe_status lathe_compiled_run_device(lathe_compiled *c, const void *const *inputs, int n_inputs,
                                       void *const *outputs, int n_outputs, void *stream);

/* The copies between host and device memory the last run of c made (any lathe_compiled_run*), and
 * their bytes: inputs in, outputs out, values crossing to host steps and back; all zero for a model
 * compiled for the CPU. A lathe_compiled_run_device run of a model with no host step and no checked
 * index input makes device-to-device copies only (one per input and output). A model whose kernels
 * check indices they compute also reads 32 bytes back each run, which is not counted here. */
typedef struct lathe_run_copies {
    int64_t host_to_device_bytes, device_to_host_bytes, device_to_device_bytes;
    int host_to_device, device_to_host, device_to_device; /* number of copies */
} lathe_run_copies;
lathe_status lathe_compiled_last_run_copies(const lathe_compiled *c, lathe_run_copies *out);

/* ---- device memory ----
 * A handle on one device of a device backend ("cuda"), for allocating the memory
 * lathe_compiled_run_device reads and writes when the caller has no CUDA allocator of its own. Its
 * memory lives in the device's primary context, the one compiled models run in. */
typedef struct lathe_device lathe_device; /* opaque */

typedef enum lathe_copy_kind {
    LATHE_COPY_HOST_TO_DEVICE = 0,
    LATHE_COPY_DEVICE_TO_HOST = 1,
    LATHE_COPY_DEVICE_TO_DEVICE = 2
} lathe_copy_kind;

/* Open device `ordinal` of `backend` ("cuda"). LATHE_ERR_UNSUPPORTED with the backend's one-line
 * reason when it cannot run here ("CUDA backend unavailable: libcuda.so.1 not found"), or for a
 * backend whose memory is host memory ("cpu": use malloc); LATHE_ERR_USAGE for a device that does
 * not exist. On failure *out is untouched and errbuf gets the message. */
lathe_status lathe_device_open(const char *backend, int ordinal, lathe_device **out, char *errbuf,
                               size_t errbuf_size);
/* Close the handle (NULL is fine). Free its memory first: memory still allocated stays allocated as
 * long as any user of the device's primary context remains (a compiled model, PyTorch, ...). */
void lathe_device_close(lathe_device *d);
/* Message of the last failed call on d ("" when none). */
const char *lathe_device_error(const lathe_device *d);
/* `bytes` of device memory (uninitialized, 256-byte aligned; 0 bytes gives a valid address).
 * LATHE_ERR_NOMEM when the device is full. Free it with lathe_device_free (NULL is fine). */
lathe_status lathe_device_alloc(lathe_device *d, size_t bytes, void **out);
void lathe_device_free(lathe_device *d, void *ptr);
/* Copy `bytes` between host memory and device memory of this device (or within device memory);
 * returns when the copy is done. Device pointers are checked as lathe_compiled_run_device checks
 * them (LATHE_ERR_USAGE naming the source or the destination). */
lathe_status lathe_device_copy(lathe_device *d, void *dst, const void *src, size_t bytes, lathe_copy_kind kind);

#ifdef __cplusplus
}
#endif

#endif
