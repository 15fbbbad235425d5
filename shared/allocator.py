"""Keep the memory of large CPU tensors for reuse instead of handing it back to the kernel after every pass.

PyTorch's CPU tensors come from the C library's malloc. glibc serves every block above its mmap threshold (it
rises with use, to 32 MB at most) with a fresh mmap and unmaps it on free, and it gives the top of its heap back
once more than the trim threshold is free there. A training step that allocates the same large blocks every pass
(an MoE layer's stacked [E, d, h] expert gradients: 64 MB at E = 64, d 256, h 1024; 16k tokens' [N, h]
activations) then page-faults all of them every pass: measured here, that was 40 % of the layer's time at 512
tokens and E = 64 (results/moe/BENCHMARK.md). CUDA's caching allocator keeps such blocks; this does the same
for the CPU by raising both thresholds to 1 GiB with mallopt, so blocks up to 1 GiB come from the heap and stay
there for the next pass. The cost: up to 1 GiB of freed memory may stay resident.

A setting the user made (glibc's MALLOC_* environment variables or GLIBC_TUNABLES) is left as it is. Off glibc
(macOS, musl) nothing is changed. The setting is process-wide: everything in the process shares it, so a
benchmark that times the suite beside its peers in one process times them under the same allocator.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from functools import cache

KEEP_BYTES = 1 << 30
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameter numbers (malloc.h)
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


def user_settings() -> dict[str, str]:
    """The malloc settings made in the environment: glibc's MALLOC_* variables and GLIBC_TUNABLES' glibc.malloc.*."""
    found = {k: v for k, v in os.environ.items() if k in USER_SETTINGS}
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        found["GLIBC_TUNABLES"] = os.environ["GLIBC_TUNABLES"]
    return found


@cache
def keep_freed_memory() -> dict[str, object]:
    """Apply the setting once per process; returns what is in force, for a record (`allocator` below)."""
    user = user_settings()
    if user:
        return {"malloc": "the user's settings", **user}
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        version = libc.gnu_get_libc_version().decode()
    except (OSError, AttributeError, TypeError):  # not glibc: its own allocator, left alone
        return {"malloc": "platform default"}
    if not (mallopt(M_MMAP_THRESHOLD, KEEP_BYTES) and mallopt(M_TRIM_THRESHOLD, KEEP_BYTES)):
        return {"malloc": f"glibc {version} defaults (mallopt refused the thresholds)"}
    return {"malloc": f"glibc {version}", "mmap_threshold": KEEP_BYTES, "trim_threshold": KEEP_BYTES}


def allocator() -> dict[str, object]:
    """What the process runs under now: the suite's setting if it was applied, else glibc's defaults or the user's."""
    if keep_freed_memory.cache_info().currsize:
        return keep_freed_memory()
    user = user_settings()
    return {"malloc": "the user's settings", **user} if user else {"malloc": "defaults"}
