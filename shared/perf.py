"""Process-level speed settings for CPU training.

glibc serves big blocks (our per-epoch activations are tens of MB) with fresh mmap'd pages and
returns them on free, so every epoch pays page faults again; on the VMs this suite runs on that
doubled the cost of a sparse matmul. Keeping freed memory in the heap removes it. Results are
unaffected: only where memory comes from changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_MAX = -1, -2, -4


def keep_freed_memory() -> bool:
    """Ask glibc malloc never to mmap big blocks nor trim the heap; True if it applied."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
    except OSError:
        return False
    ok = libc.mallopt(M_MMAP_MAX, 0) == 1
    ok &= libc.mallopt(M_TRIM_THRESHOLD, 2**30) == 1
    ok &= libc.mallopt(M_TOP_PAD, 2**28) == 1
    return bool(ok)
