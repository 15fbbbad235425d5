"""Fused L1 distances ``||q_i - e_j||_1`` of queries (B, d) against candidates (N, d) -> (B, N), with gradients.

TransE's official distance has no matrix-product form: ranking all 14,541 FB15k-237 entities for the 40,932 test
queries at dim 1000 is 5.8e11 absolute differences. This module runs them in a small C kernel, compiled once per
machine with the system C compiler (~1 s) and called through ctypes. Candidates measured on a 2-core Xeon (AVX-512,
AMX), one thread, 256 queries x 14,541 entities x d 1000, in differences per CPU second (beside two training jobs):

* ``torch.cdist(p=1)``, whole or in column blocks: 0.74e9 (the evaluator's old path: ~950 s for the test set);
* ``torch.compile`` of ``(q[:, None] - e).abs().sum(-1)`` in 4096-column blocks: 4.3e9, after ~60 s of compiling
  per shape, and it needs a C++ compiler as well;
* this kernel (its earlier form, below): 24.9e9. numba would be a new dependency for the same loop.
* against the bound that ``bench_l1`` measures beside it (``l1_bound`` below: the kernel's three operations per
  difference, same flags, operands in L1 and registers), one thread, interleaved rounds, same shape, on a 2-core
  AMD EPYC (Zen 4: AVX-512 on 256-bit datapaths) with other jobs on both cores (load average 5-8), medians of
  12-15 rounds: this kernel 23-25e9 against a bound of 27-29e9, 0.85 of it in most runs (0.80-0.89; 0.75-0.79 in
  runs beside memory-heavy jobs, which slow the kernel's L3/DRAM traffic and not the register-bound loop); the
  earlier form 0.70-0.77 in the same runs (this one is 1.13-1.18x faster), which lost the difference to a scalar
  loop over the last d % 16 coordinates (8 of 1000, each 16x the vector cost) and 16 serial scalar adds per sum of
  lanes. What is left: ~5% is the 4 x 4 block itself (lane sums, loop), ~5% the candidates and queries arriving
  from L2/L3 and DRAM (tried, none gaining beyond noise: prefetching the next block or tile, a serpentine query order,
  256-bit vectors, tiles of 32 or 128; query tiles lost, each a pass more over the 58 MB of candidates).
* not taken: ``|x - y| = 2 max(x, y) - x - y`` (one vector max and one add, row sums apart) ran 1.3x faster,
  but its rounding error scales with the embeddings' magnitude instead of the distance, which matters exactly
  for the near-ties at the top of a trained model's ranking.

The kernel: 4 queries x 4 candidates per step, 16 vector accumulators, every loaded vector used 4 times; tiles of
64 candidates stay in L2 while all queries stream past them; the last d % lanes coordinates as one more masked
vector step; lanes summed by a fixed pairwise tree; ``-march=native`` (AVX-512 lanes where the CPU has them, AVX2
otherwise) through GCC/Clang vector extensions, so no intrinsics and any architecture. No ``-ffast-math`` and no FMA
contraction: each lane adds in a fixed order and lanes are summed in a fixed order, so
identical candidates get bit-identical distances wherever they sit (ties stay ties) and the thread count does not
change a bit (threads split rows or columns of the output, never a sum). Backward (training's negative scores):
``dq_i = sum_j g_ij sign(q_i - e_j)``, ``de_j = -sum_i g_ij sign(q_i - e_j)`` in the same blocked loop, sign 0 at 0
as autograd's ``abs``. Threads: ctypes releases the GIL, so ``torch.get_num_threads()`` Python threads each run one
slab of the output; no second OpenMP runtime beside torch's.

Fallback: no C compiler, a failed build (one RuntimeWarning saying why), a GPU tensor, a dtype other than float32,
or ``REP_L1_KERNEL=0`` -> ``torch.cdist(p=1)`` in column blocks (equal within float rounding; ``backend()`` says
which runs). The library is cached as ``<cache>/l1score/l1_<hash of source, compiler, flags, CPU flags>.so``
(built under a file lock, renamed into place atomically).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
from torch import Tensor

from shared.exclusive import file_lock, lock_beside
from shared.paths import cache_folder

FALLBACK_BLOCK = 4096  # candidate columns per cdist call in the fallback (bounds its temporaries)
MIN_SLAB = 64  # fewest output rows/columns worth a thread of their own

SOURCE = r"""
#include <stdint.h>
#include <stddef.h>
#if defined(__AVX512F__)
#define W 16
#else
#define W 8
#endif
#define QB 4
#define EB 4
/* 64 candidates x d 1000 = 256 KB: stays in L2 (1 MB on Zen 4, 2 MB on Sapphire Rapids) beside the 4 query rows in
   L1 while queries stream past; 32 / 64 / 128 measured within noise of each other, 128 + all queries overflow 1 MB */
#define TILE 64
typedef float vf __attribute__((vector_size(W * 4), aligned(4)));
typedef int32_t vi __attribute__((vector_size(W * 4), aligned(4)));
typedef float vh __attribute__((vector_size(W * 2), aligned(4)));
typedef float v4 __attribute__((vector_size(16), aligned(4)));
typedef float v2 __attribute__((vector_size(8), aligned(4)));

/* |x| as a sign-bit mask: m = 0x7fffffff in lanes that count, 0 in lanes that must add +0 (the tail) */
static inline vf vabsm(vf x, vi m) { return (vf)((vi)x & m); }
/* Sum of the lanes as a fixed pairwise tree (halves, then quarters, ...): log2(W) vector adds instead of W - 1
   scalar ones, and the same tree everywhere, so equal accumulators give equal sums. Unions: type punning that C99
   defines, where casting pointers between vector types would break strict aliasing. */
static inline float hsum(vf v) {
    union { vf v; vh h[2]; } a = {v};
    vh h = a.h[0] + a.h[1];
#if W == 16
    union { vh h; v4 q[2]; } b = {h};
    v4 q = b.q[0] + b.q[1];
#else
    v4 q = h;
#endif
    union { v4 q; v2 p[2]; } c = {q};
    v2 p = c.p[0] + c.p[1];
    return p[0] + p[1];
}
/* The last d % W coordinates as one vector step, not a scalar loop (8 of 1000 coordinates at W = 16, 16x slower):
   the vector that ends at d when d >= W (its first lanes repeat coordinates already summed and are masked to +0), else
   the row right-aligned in zeros. Either way coordinate k sits in lane k - (d - W), the same in every caller. */
static inline vf tailv(const float *row, int64_t d) {
    if (d >= W) return *(const vf *)(row + d - W);
    vf t = {0};
    for (int64_t l = 0; l < d; l++) t[W - d + l] = row[l];
    return t;
}
static inline vi tailmask(int64_t rem) {
    vi m;
    for (int l = 0; l < W; l++) m[l] = l >= W - rem ? 0x7fffffff : 0;
    return m;
}
static inline vf gsign(vf g, vf x) { return (vf)((((vi)g) ^ (((vi)x) & (int32_t)0x80000000)) & (x != 0)); }
static inline float gsign1(float g, float x) { return x > 0 ? g : (x < 0 ? -g : 0.0f); }

/* One (query, candidate) distance: the same operations in the same order as a 4x4 block, so ties are bit-identical. */
static float one(const float *a, const float *b, int64_t d, vi abs, vi tail) {
    int64_t dv = d - d % W;
    vf acc = {0};
    for (int64_t k = 0; k < dv; k += W) acc += vabsm(*(const vf *)(a + k) - *(const vf *)(b + k), abs);
    if (dv < d) acc += vabsm(tailv(a, d) - tailv(b, d), tail);  /* adding +0 leaves a lane unchanged */
    return hsum(acc);
}

/* One k step of the 4 x 4 block: each loaded vector used 4 times, 16 independent accumulators. */
#define STEP(X0, X1, X2, X3, Y0, Y1, Y2, Y3, M) { \
    vf x0 = X0, x1 = X1, x2 = X2, x3 = X3, y; \
    y = Y0; c00 += vabsm(x0 - y, M); c10 += vabsm(x1 - y, M); c20 += vabsm(x2 - y, M); c30 += vabsm(x3 - y, M); \
    y = Y1; c01 += vabsm(x0 - y, M); c11 += vabsm(x1 - y, M); c21 += vabsm(x2 - y, M); c31 += vabsm(x3 - y, M); \
    y = Y2; c02 += vabsm(x0 - y, M); c12 += vabsm(x1 - y, M); c22 += vabsm(x2 - y, M); c32 += vabsm(x3 - y, M); \
    y = Y3; c03 += vabsm(x0 - y, M); c13 += vabsm(x1 - y, M); c23 += vabsm(x2 - y, M); c33 += vabsm(x3 - y, M); }
#define AT(p) (*(const vf *)((p) + k))

/* out[i * ld + j] = sum_k |q[i, k] - e[j, k]| for i < nq, j < ne (row-major, rows of length d). */
void l1_forward(const float *q, int64_t nq, const float *e, int64_t ne, int64_t d, float *out, int64_t ld) {
    int64_t dv = d - d % W;
    vi abs = tailmask(W), tail = tailmask(d - dv);
    for (int64_t j0 = 0; j0 < ne; j0 += TILE) {
        int64_t j1 = j0 + TILE < ne ? j0 + TILE : ne;
        for (int64_t i = 0; i < nq; i += QB) {
            int64_t j = j0;
            if (i + QB <= nq) {
                const float *a0 = q + i * d, *a1 = a0 + d, *a2 = a1 + d, *a3 = a2 + d;
                for (; j + EB <= j1; j += EB) {
                    const float *b0 = e + j * d, *b1 = b0 + d, *b2 = b1 + d, *b3 = b2 + d;
                    vf c00 = {0}, c01 = {0}, c02 = {0}, c03 = {0}, c10 = {0}, c11 = {0}, c12 = {0}, c13 = {0};
                    vf c20 = {0}, c21 = {0}, c22 = {0}, c23 = {0}, c30 = {0}, c31 = {0}, c32 = {0}, c33 = {0};
                    for (int64_t k = 0; k < dv; k += W)
                        STEP(AT(a0), AT(a1), AT(a2), AT(a3), AT(b0), AT(b1), AT(b2), AT(b3), abs)
                    if (dv < d)
                        STEP(tailv(a0, d), tailv(a1, d), tailv(a2, d), tailv(a3, d),
                             tailv(b0, d), tailv(b1, d), tailv(b2, d), tailv(b3, d), tail)
                    float *o = out + i * ld + j;
                    o[0] = hsum(c00); o[1] = hsum(c01); o[2] = hsum(c02); o[3] = hsum(c03); o += ld;
                    o[0] = hsum(c10); o[1] = hsum(c11); o[2] = hsum(c12); o[3] = hsum(c13); o += ld;
                    o[0] = hsum(c20); o[1] = hsum(c21); o[2] = hsum(c22); o[3] = hsum(c23); o += ld;
                    o[0] = hsum(c30); o[1] = hsum(c31); o[2] = hsum(c32); o[3] = hsum(c33);
                }
            }
            int64_t i1 = i + QB < nq ? i + QB : nq;
            for (int64_t r = i; r < i1; r++)  /* edges: columns left in this tile, or a short last row block */
                for (int64_t c = j; c < j1; c++) out[r * ld + c] = one(q + r * d, e + c * d, d, abs, tail);
        }
    }
}

/* The arithmetic bound the benchmark compares l1_forward with (bench_l1.kernel_vs_bound): out[c] += the sum over
   reps passes of sum_k |a[k] - b[c * W + k % W]|, for c < 8 and k < n (n a multiple of W). The same three operations
   per difference as the kernel (subtract, abs as a sign mask, add), compiled with it (same flags: no fast-math, no FMA
   contraction), and nothing else to limit it: a is a few KB read from L1, the 8 vectors of b stay in registers (one
   load per 8 vector differences) and 8 independent accumulators cover the add's latency (4 cycles x 2 ports on
   current x86). The accumulators run on across passes, so no pass repeats another's work: without reassociation
   (no fast-math) the compiler can drop none of them; lanes are summed once, at the end. */
void l1_bound(const float *a, int64_t n, const float *b, int64_t reps, float *out) {
    vi abs = tailmask(W);
    vf y0 = *(const vf *)b, y1 = *(const vf *)(b + W), y2 = *(const vf *)(b + 2 * W), y3 = *(const vf *)(b + 3 * W);
    vf y4 = *(const vf *)(b + 4 * W), y5 = *(const vf *)(b + 5 * W), y6 = *(const vf *)(b + 6 * W);
    vf y7 = *(const vf *)(b + 7 * W);
    vf s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0}, s6 = {0}, s7 = {0};
    for (int64_t r = 0; r < reps; r++)
        for (int64_t k = 0; k < n; k += W) {
            vf x = *(const vf *)(a + k);
            s0 += vabsm(x - y0, abs); s1 += vabsm(x - y1, abs); s2 += vabsm(x - y2, abs); s3 += vabsm(x - y3, abs);
            s4 += vabsm(x - y4, abs); s5 += vabsm(x - y5, abs); s6 += vabsm(x - y6, abs); s7 += vabsm(x - y7, abs);
        }
    out[0] += hsum(s0); out[1] += hsum(s1); out[2] += hsum(s2); out[3] += hsum(s3);
    out[4] += hsum(s4); out[5] += hsum(s5); out[6] += hsum(s6); out[7] += hsum(s7);
}

/* Lanes per vector (16 with AVX-512, else 8): the bound's b holds 8 of them. */
int l1_lanes(void) { return W; }

/* gq[i] += sum_j g[i, j] sign(q_i - e_j); ge[j] -= sum_i g[i, j] sign(q_i - e_j); either may be NULL. */
void l1_backward(const float *q, int64_t nq, const float *e, int64_t ne, int64_t d, const float *g, int64_t ld,
                 float *gq, float *ge) {
    int64_t dv = d - d % W;
    for (int64_t j0 = 0; j0 < ne; j0 += TILE) {
        int64_t j1 = j0 + TILE < ne ? j0 + TILE : ne;
        for (int64_t i = 0; i < nq; i++) {
            const float *a = q + i * d;
            int64_t j = j0;
            for (; j + EB <= j1; j += EB) {
                const float *b0 = e + j * d, *b1 = b0 + d, *b2 = b1 + d, *b3 = b2 + d;
                float g0 = g[i * ld + j], g1 = g[i * ld + j + 1], g2 = g[i * ld + j + 2], g3 = g[i * ld + j + 3];
                for (int64_t k = 0; k < dv; k += W) {
                    vf x = *(const vf *)(a + k);
                    vf s0 = gsign(g0 + (vf){0}, x - *(const vf *)(b0 + k));
                    vf s1 = gsign(g1 + (vf){0}, x - *(const vf *)(b1 + k));
                    vf s2 = gsign(g2 + (vf){0}, x - *(const vf *)(b2 + k));
                    vf s3 = gsign(g3 + (vf){0}, x - *(const vf *)(b3 + k));
                    if (gq) *(vf *)(gq + i * d + k) += (s0 + s1) + (s2 + s3);
                    if (ge) {
                        *(vf *)(ge + j * d + k) -= s0; *(vf *)(ge + (j + 1) * d + k) -= s1;
                        *(vf *)(ge + (j + 2) * d + k) -= s2; *(vf *)(ge + (j + 3) * d + k) -= s3;
                    }
                }
                for (int64_t k = dv; k < d; k++)
                    for (int c = 0; c < EB; c++) {
                        float s = gsign1(g[i * ld + j + c], a[k] - e[(j + c) * d + k]);
                        if (gq) gq[i * d + k] += s;
                        if (ge) ge[(j + c) * d + k] -= s;
                    }
            }
            for (; j < j1; j++)
                for (int64_t k = 0; k < d; k++) {
                    float s = gsign1(g[i * ld + j], a[k] - e[j * d + k]);
                    if (gq) gq[i * d + k] += s;
                    if (ge) ge[j * d + k] -= s;
                }
        }
    }
}
"""

_FLOAT_P = ctypes.POINTER(ctypes.c_float)
_lib: ctypes.CDLL | None = None
_why_not: str | None = None
_loaded = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def build_flags() -> list[str]:
    """-march=native for the CPU's widest vectors; no fast-math and no FMA contraction, so every sum rounds in the
    order the source writes (the exactness guarantees above). The benchmark's bound is compiled with the same."""
    return ["-O3", "-march=native", "-fno-fast-math", "-ffp-contract=off", "-shared", "-fPIC", "-std=c99"]


def compiler() -> str | None:
    """The C compiler the kernel is built with: $CC, else cc, gcc or clang on PATH."""
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def compiler_version(cc: str) -> str:
    try:
        return subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _library_path(cc: str) -> Path:
    version = compiler_version(cc)
    try:
        cpu = next((x for x in Path("/proc/cpuinfo").read_text().splitlines() if x.startswith(("flags", "Features"))), "")
    except OSError:
        cpu = ""
    digest = hashlib.sha256("\0".join([SOURCE, cc, version, " ".join(build_flags()), cpu]).encode()).hexdigest()[:20]
    return cache_folder() / "l1score" / f"l1_{digest}.so"


def _build() -> ctypes.CDLL:
    """Compile SOURCE once per (source, compiler, CPU) into the cache and load it; raises OSError / RuntimeError."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc or clang) on PATH")
    target = _library_path(cc)
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(lock_beside(target)):  # one build at a time; the others then load it
        if not target.exists():
            with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
                src, out = Path(tmp) / "l1score.c", Path(tmp) / target.name
                src.write_text(SOURCE)
                done = subprocess.run([cc, *build_flags(), str(src), "-o", str(out)], capture_output=True, text=True,
                                      timeout=300)
                if done.returncode != 0:
                    raise RuntimeError(f"{cc} failed: {done.stderr.strip()[-400:]}")
                os.replace(out, target)  # atomic: a reader sees no library or a whole one
    lib = ctypes.CDLL(str(target))
    i64 = ctypes.c_int64
    lib.l1_forward.argtypes = [_FLOAT_P, i64, _FLOAT_P, i64, i64, _FLOAT_P, i64]
    lib.l1_backward.argtypes = [_FLOAT_P, i64, _FLOAT_P, i64, i64, _FLOAT_P, i64, _FLOAT_P, _FLOAT_P]
    lib.l1_bound.argtypes = [_FLOAT_P, i64, _FLOAT_P, i64, _FLOAT_P]
    lib.l1_forward.restype = lib.l1_backward.restype = lib.l1_bound.restype = None
    lib.l1_lanes.argtypes, lib.l1_lanes.restype = [], ctypes.c_int
    return lib


def kernel() -> ctypes.CDLL | None:
    """The compiled kernel, built on first use; None (with one warning saying why) where it cannot be built."""
    global _lib, _why_not
    with _loaded:
        if _lib is None and _why_not is None:
            if os.environ.get("REP_L1_KERNEL", "1") == "0":
                _why_not = "REP_L1_KERNEL=0"
            else:
                try:
                    _lib = _build()
                except (OSError, RuntimeError, subprocess.SubprocessError) as err:
                    _why_not = str(err).splitlines()[0] if str(err) else type(err).__name__
                    warnings.warn(f"fused L1 kernel unavailable ({_why_not}); TransE L1 uses torch.cdist (slower)",
                                  RuntimeWarning, stacklevel=3)
        return _lib


def backend() -> str:
    """Which implementation CPU float32 inputs get: 'kernel' or 'cdist (<why>)'."""
    return "kernel" if kernel() is not None else f"cdist ({_why_not})"


def _ptr(t: Tensor | None):
    return None if t is None else ctypes.cast(t.data_ptr(), _FLOAT_P)


def _slabs(n: int) -> list[tuple[int, int]]:
    parts = max(1, min(torch.get_num_threads(), n // MIN_SLAB))
    step = -(-n // parts)
    return [(s, min(n, s + step)) for s in range(0, n, step)]


def _run(jobs: list) -> None:
    """Run the kernel calls, on the pool's threads when there are several (ctypes drops the GIL)."""
    global _pool
    if len(jobs) == 1:
        jobs[0]()
        return
    if _pool is None or _pool._max_workers < len(jobs):
        _pool = ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="l1score")
    for future in [_pool.submit(job) for job in jobs]:
        future.result()


def _forward(lib: ctypes.CDLL, q: Tensor, e: Tensor) -> Tensor:
    nq, ne, d = q.shape[0], e.shape[0], q.shape[1]
    out = torch.empty(nq, ne, dtype=torch.float32)
    if nq == 0 or ne == 0:
        return out
    step = out.stride(0)
    if nq >= ne:  # split the larger side; each thread writes its own rows or columns
        jobs = [lambda a=a, b=b: lib.l1_forward(_ptr(q[a:b]), b - a, _ptr(e), ne, d, _ptr(out[a:b]), step)
                for a, b in _slabs(nq)]
    else:
        jobs = [lambda a=a, b=b: lib.l1_forward(_ptr(q), nq, _ptr(e[a:b]), b - a, d, _ptr(out[:, a:b]), step)
                for a, b in _slabs(ne)]
    _run(jobs)
    return out


def _backward(lib: ctypes.CDLL, q: Tensor, e: Tensor, g: Tensor, want_q: bool, want_e: bool):
    nq, ne, d = q.shape[0], e.shape[0], q.shape[1]
    gq = torch.zeros_like(q) if want_q else None
    ge = torch.zeros_like(e) if want_e else None
    step = g.stride(0)
    if torch.get_num_threads() == 1:  # one pass computes both
        lib.l1_backward(_ptr(q), nq, _ptr(e), ne, d, _ptr(g), step, _ptr(gq), _ptr(ge))
        return gq, ge
    jobs = []
    if want_q:  # rows of gq are sums over all candidates: split queries
        jobs += [lambda a=a, b=b: lib.l1_backward(_ptr(q[a:b]), b - a, _ptr(e), ne, d, _ptr(g[a:b]), step,
                                                  _ptr(gq[a:b]), None) for a, b in _slabs(nq)]
    if want_e:  # rows of ge are sums over all queries: split candidates
        jobs += [lambda a=a, b=b: lib.l1_backward(_ptr(q), nq, _ptr(e[a:b]), b - a, d, _ptr(g[:, a:b]), step,
                                                  None, _ptr(ge[a:b])) for a, b in _slabs(ne)]
    _run(jobs)
    return gq, ge


class _FusedL1(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q: Tensor, e: Tensor) -> Tensor:
        ctx.save_for_backward(q, e)
        return _forward(kernel(), q, e)

    @staticmethod
    def backward(ctx, grad: Tensor):
        q, e = ctx.saved_tensors
        gq, ge = _backward(kernel(), q, e, grad.contiguous(), *ctx.needs_input_grad)
        return gq, ge


def cdist_l1(q: Tensor, cand: Tensor) -> Tensor:
    """The fallback: torch.cdist(p=1) over column blocks of at most FALLBACK_BLOCK candidates."""
    if cand.shape[0] <= FALLBACK_BLOCK:
        return torch.cdist(q, cand, p=1.0)
    return torch.cat([torch.cdist(q, cand[j:j + FALLBACK_BLOCK], p=1.0)
                      for j in range(0, cand.shape[0], FALLBACK_BLOCK)], dim=1)


def l1_distances(q: Tensor, cand: Tensor) -> Tensor:
    """(B, N) = ``||q_i - cand_j||_1`` for q (B, d), cand (N, d); differentiable in both."""
    if q.dim() != 2 or cand.dim() != 2 or q.shape[1] != cand.shape[1]:
        raise ValueError(f"l1_distances needs (B, d) and (N, d) with the same d, got {tuple(q.shape)} and "
                         f"{tuple(cand.shape)}")
    usable = (q.device.type == "cpu" and cand.device.type == "cpu" and q.dtype == torch.float32
              and cand.dtype == torch.float32)
    if not usable or kernel() is None:
        return cdist_l1(q, cand)
    return _FusedL1.apply(q.contiguous(), cand.contiguous())
