"""shared/allocator.py: large blocks freed by one pass are reused by the next instead of being faulted in again."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from shared.allocator import keep_freed_memory

PASSES = 20
FAULTS = textwrap.dedent(f"""
    import resource, sys, torch
    from shared.allocator import keep_freed_memory
    if sys.argv[1] == "keep":
        keep_freed_memory()
    def one_pass():  # a 64 MB block, as an MoE layer's stacked expert gradient at E = 64
        torch.empty(64 << 20, dtype=torch.uint8).fill_(1)
    for _ in range(3):
        one_pass()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range({PASSES}):
        one_pass()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


def page_faults(mode: str) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True, text=True, check=True, env=env)
    return int(out.stdout.split()[-1])


def glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (ValueError, OSError, AttributeError):
        return False


@pytest.mark.skipif(not glibc(), reason="glibc's thresholds only")
def test_kept_memory_is_not_faulted_in_again_on_every_pass():
    # glibc's defaults map a 64 MB block afresh each pass: 16k faults a pass at 4 KiB pages (32 with 2 MiB
    # transparent huge pages); kept, the block comes back from the heap already resident
    default, kept = page_faults("default"), page_faults("keep")
    assert default > 25 * PASSES and kept < 50, (default, kept)


def test_a_users_own_malloc_setting_is_left_in_force(monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    setting = keep_freed_memory.__wrapped__()  # the uncached call: nothing is applied, the user's value is named
    assert setting == {"malloc": "the user's settings", "MALLOC_MMAP_THRESHOLD_": "65536"}
