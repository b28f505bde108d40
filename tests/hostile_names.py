"""hostile_names.py — tensor, node and graph names that are valid in ONNX but hostile to a code
generator, and a builder of small compiled models that use them (for tests/test_names.py and
fuzz/fuzz_export.py).

NAMES holds str values; a lone surrogate (\\udcXX) stands for the raw byte 0xXX (invalid UTF-8, which
the ONNX wire format carries but Python's protobuf will not write): `raw(name)` gives the bytes and
`save_model` writes such names by patching the serialized model. Families: C/C++/CUDA keywords and
extensions, macros of math.h / stdint.h / stdio.h / limits.h / stdlib.h / omp.h and predefined ones,
CUDA vector types and built-ins, lathe's own generated identifiers, comment and string syntax
(*/, /*, //, quotes, backslashes, trigraphs), format directives, control bytes and ANSI escapes,
non-ASCII UTF-8, invalid bytes, very long names, and names that differ only in case or in
characters a naive mangler maps to '_'.
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Closes the string literal of a `snprintf(err, ..., "input '<name>' is NULL")` through the trigraph
# ??/ (a backslash under -std=c99/c11) when '?' is not escaped, then runs `system("touch PWNED")`
# (the command spelled as char codes: an escaped quote would not survive) on that error path.
TRIGRAPH_INJECTION = '??/"); } { char c[] = {116,111,117,99,104,32,80,87,78,69,68,0}; system(c); } //'

KEYWORDS = """auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn
_Static_assert _Thread_local _Pragma _BitInt bool true false nullptr constexpr typeof typeof_unqual
static_assert thread_local alignas alignof class new delete this template typename namespace operator
private public protected virtual friend using throw try catch and or not xor bitand compl and_eq
asm __asm__ __attribute__ __int128 __typeof__ __restrict __inline __extension__ __builtin_expect
__func__ __LINE__ __FILE__ __DATE__ __TIME__ __COUNTER__ __STDC__ __STDC_VERSION__ __cplusplus
__GNUC__ __x86_64__ __CUDA_ARCH__ __CUDACC__ __device__ __global__ __shared__ __host__ __constant__
__restrict__ __syncthreads __launch_bounds__ __forceinline__""".split()

MACROS = """INFINITY NAN HUGE_VAL HUGE_VALF M_PI M_E FP_NAN FP_INFINITY MATH_ERRNO isnan isinf signbit
fpclassify INT64_MAX INT64_MIN INT32_MAX UINT64_MAX SIZE_MAX INTPTR_MAX PTRDIFF_MAX INT8_C UINT64_C
INTMAX_MAX EOF BUFSIZ FILENAME_MAX NULL stdin stdout stderr SEEK_SET CHAR_BIT INT_MAX LONG_MAX
CHAR_MIN EXIT_SUCCESS EXIT_FAILURE RAND_MAX MB_CUR_MAX errno assert offsetof unix linux i386 _OPENMP
omp_get_thread_num omp_lock_t CLOCK_MONOTONIC _POSIX_C_SOURCE _GNU_SOURCE""".split()

TYPES = """int8_t uint64_t size_t ptrdiff_t uintptr_t float4 uint4 int2 double2 longlong4 char1 dim3 half
half2 __half __nv_bfloat16 threadIdx blockIdx blockDim gridDim warpSize malloc free memcpy memset
printf main exit abort system sqrtf expf exp sqrt fabsf min max""".split()

LATHE = """args a0 a1 a2 t0 s0 v0 v1 i0 o0 r0 acc t in_0 out_0 x_0 ws lt_k0 lt_k1 lt_k0_pack0 lathe_kernels
lathe_n_kernels lathe_set_threads lt_nthreads lt_kernel_desc model model_run model_init model_inputs
model_outputs model_input_names MODEL_WORKSPACE_BYTES MODEL_H LT_NAN_F32 LT_COPY16 LT_ALIGNED
io_desc_ inputs_ N_IN_ MAX_RANK_ put_name read_input pos weights usage""".split()

SYNTAX = [
    "*/", "/*", "//", "a*/b", "/* x */", "// line", "\\", "\\\\", '"', "'", '"\'"', "a\\", "a\\\nb",
    "??/", "??=", "??'", "??(", "??)", "??!", "??<", "??>", "??-", "a??/", "x??/n",
    '??/" ); system("touch PWNED"); //',
    TRIGRAPH_INJECTION,
    '"); system("touch PWNED"); //', "*/ int pwned = 1; /*", "\n#define x 1\n", "#include <stdio.h>",
    "%n", "%s%s%s%s", "%d", "%%", "%.9999999f", "\n", "a\nb", "\r\n", "\t", "\x01", "\x7f", "\x1b[31mred\x1b[0m",
    "\\x41", "\\u0041", "\\0", "\\101", "a b", " ", "  lead", "trail ", "$dollar", "@at", "`tick`", "{}", "};",
    "<:", "<%", "%:%:", "#", "##", "a.b", "a_b", "a-b", "a/b", "a:b", "a::b", "a,b", "a;b", "(a)", "[a]",
    "0", "1abc", "_1abc", "v_1abc", "_", "__", "___x", "_Z", "-1", "1e9", "0x10", "3.14",
]

NON_ASCII = ["é", "名前", "🙂", "Ωmega", "\u202eRTL", "e\u0301", "\u00a0nbsp", "\ufeffbom", "ß",
             "\udcffbyte", "x\udcffy_ff", "\udcc0\udc80overlong", "\udcfe\udcfe_fe", "ok\udced\udca0\udc80surrogate"]

CASE = ["X", "x", "Relu", "relu", "RELU", "A0", "Lt_k0", "LT_K0", "inf", "Inf", "nan", "NaN",
        "x" * 300, "y" * 5000, "INFINITY" * 100, "a" * 129 + "b", "a" * 129 + "c", "\\" * 200, "?" * 100, "*/" * 100]

NAMES = list(dict.fromkeys(KEYWORDS + MACROS + TYPES + LATHE + SYNTAX + NON_ASCII + CASE))


def raw(name):
    """The bytes of a name (lone surrogates \\udcXX are the raw bytes 0xXX)."""
    return name.encode("utf-8", "surrogateescape")


def _placeholder(n, i):
    tag = "Q%dZ" % i
    if n < len(tag) + 1:
        raise ValueError("an invalid-UTF-8 name needs at least %d bytes" % (len(tag) + 1))
    return tag + "#" * (n - len(tag))


class Namer:
    """Hands out names in order; names that are not valid UTF-8 get an ASCII placeholder of the same
    byte length, patched back in by save_model."""

    def __init__(self, names):
        self.names, self.i, self.patches = list(names), 0, []

    def __call__(self):
        name = self.names[self.i % len(self.names)]
        self.i += 1
        b = raw(name)
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            for ph, r in self.patches:
                if r == b:
                    return ph.decode()
            ph = _placeholder(len(b), len(self.patches))
            self.patches.append((ph.encode(), b))
            return ph

    def real(self, s):
        """The raw bytes a (possibly placeholder) name stands for."""
        b = s.encode()
        for ph, r in self.patches:
            if b == ph:
                return r
        return b


def save_model(model, path, namer):
    data = model.SerializeToString()
    for ph, r in namer.patches:  # (a model may use only some of the namer's names)
        data = data.replace(ph, r)
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def chain_model(names, steps=20, seed=0):
    """A small model whose graph, input, output, initializer, intermediate and node names all come
    from `names`: Relu, Add, Conv, Reshape, MatMul, Softmax and elementwise steps, every other
    intermediate also a graph output, an input passed straight through as an output.
    Returns (ModelProto, Namer, output names as raw bytes, [(input name raw, shape)])."""
    rng = np.random.default_rng(seed)
    nm = Namer(names)
    x0, x1, x2 = nm(), nm(), nm()
    wc, wm, sh = nm(), nm(), nm()
    inputs = [helper.make_tensor_value_info(x0, TensorProto.FLOAT, [2, 3, 4, 4]),
              helper.make_tensor_value_info(x1, TensorProto.FLOAT, [2, 3, 4, 4]),
              helper.make_tensor_value_info(x2, TensorProto.FLOAT, [2, 48])]
    inits = [numpy_helper.from_array(rng.uniform(-0.5, 0.5, (3, 3, 3, 3)).astype(np.float32), wc),
             numpy_helper.from_array(rng.uniform(-0.5, 0.5, (48, 16)).astype(np.float32), wm),
             numpy_helper.from_array(np.array([2, 48], np.int64), sh)]
    nodes, outs = [], [(x1, [2, 3, 4, 4])]
    used = set()

    def fresh():
        for _ in range(len(names)):
            s = nm()
            if s not in used and s not in (x0, x1, x2, wc, wm, sh):
                used.add(s)
                return s
        raise ValueError("chain_model: not enough distinct names")

    def node(op, ins, shape, out_every=True, **attrs):
        t = fresh()
        nodes.append(helper.make_node(op, ins, [t], name=fresh(), **attrs))
        if out_every:
            outs.append((t, shape))
        return t

    a = node("Relu", [x0], [2, 3, 4, 4], False)
    b = node("Add", [a, x1], [2, 3, 4, 4])
    c = node("Conv", [b, wc], [2, 3, 4, 4], False, pads=[1, 1, 1, 1])
    d = node("Relu", [c], [2, 3, 4, 4])
    e = node("Reshape", [d, sh], [2, 48], False)
    f = node("Add", [e, x2], [2, 48])
    g = node("MatMul", [f, wm], [2, 16], False)
    h = node("Softmax", [g], [2, 16])
    t = h
    for k in range(steps):
        op = ["Relu", "Neg", "Sigmoid", "Abs"][k % 4]
        t = node(op, [t], [2, 16], out_every=k % 2 == 1)
    if outs[-1][0] != t:
        outs.append((t, [2, 16]))
    graph = helper.make_graph(nodes, fresh(), inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, s) for o, s in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return (model, nm, [nm.real(o) for o, _ in outs],
            [(nm.real(i.name), [d.dim_value for d in i.type.tensor_type.shape.dim]) for i in inputs])
