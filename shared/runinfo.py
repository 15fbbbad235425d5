"""What a result file records about how it was made: command, versions, hardware, git state."""

from __future__ import annotations

import os
import platform
import re
import resource
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import torch

from shared.allocator import allocator
from shared.paths import REPO_ROOT

PACKAGES = ["torch", "torch-geometric", "numpy", "scipy", "scikit-learn", "hydra-core", "wandb", "datasets"]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def git_state() -> dict:
    """The commit checked out now, and whether code or configs differ from it (results/ excluded: a protocol
    rewrites it as it goes)."""
    return {
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no", "--", ":(top,exclude)results")),
    }


_ABSOLUTE = re.compile(r"(?<![\w.~-])/[^\s\"',\]\[]+")


def portable_paths(text: str, keep: int = 2) -> str:
    """No machine's absolute paths in a result file: paths inside the repository become relative to it, and
    any other absolute path keeps only its last ``keep`` parts (``.../shards/acm12``), enough to tell jobs apart."""
    text = text.replace(f"{REPO_ROOT}/", "").replace(str(REPO_ROOT), ".")
    return _ABSOLUTE.sub(lambda m: ".../" + "/".join(Path(m.group(0)).parts[-keep:]), text)


# /proc/cpuinfo flags that decide which CPU kernels run (oneDNN, MKL, ATen), hence the low bits of every
# number: AMX tiles, AVX-512 BF16/VNNI/FP16, AVX2/FMA.
KERNEL_FLAGS = ("amx_bf16", "amx_fp16", "amx_int8", "amx_tile", "avx512_bf16", "avx512_fp16", "avx512_vnni",
                "avx512bw", "avx512dq", "avx512f", "avx512vl", "avx_vnni", "avx2", "fma")
# oneDNN's CPU ISAs, lowest first (its ONEDNN_MAX_CPU_ISA names; avx10_1_512* are newer aliases of the same).
ONEDNN_ISAS = ("below_avx2", "avx2", "avx2_vnni", "avx512_core", "avx512_core_vnni", "avx512_core_bf16",
               "avx512_core_fp16", "avx512_core_amx", "avx512_core_amx_fp16")
_ISA_ALIASES = {"avx10_1_512": "avx512_core_fp16", "avx10_1_512_amx": "avx512_core_amx",
                "avx10_1_512_amx_fp16": "avx512_core_amx_fp16", "all": ONEDNN_ISAS[-1]}
# Environment variables that change which kernels run or how they reduce.
NUMERICS_ENV = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR",
                "ONEDNN_DEFAULT_FPMATH_MODE", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def cpu_flags(cpuinfo: str | None = None) -> list[str]:
    """The kernel-selecting flags of this CPU (KERNEL_FLAGS it has), sorted; [] where /proc/cpuinfo is absent."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return []
    for line in cpuinfo.splitlines():
        if line.startswith(("flags", "Features")):
            have = set(line.split(":", 1)[1].split())
            return sorted(f for f in KERNEL_FLAGS if f in have)
    return []


def onednn_isa(flags: list[str], max_isa: str | None = None) -> str:
    """The ISA oneDNN dispatches to: the highest its CPU flags allow, capped by ONEDNN_MAX_CPU_ISA (``max_isa``)."""
    have = set(flags)
    if {"amx_bf16", "amx_tile", "amx_int8", "avx512_bf16"} <= have:
        isa = "avx512_core_amx_fp16" if "amx_fp16" in have else "avx512_core_amx"
    elif {"avx512_fp16", "avx512_bf16"} <= have:
        isa = "avx512_core_fp16"
    elif "avx512_bf16" in have:
        isa = "avx512_core_bf16"
    elif {"avx512_vnni", "avx512f"} <= have:
        isa = "avx512_core_vnni"
    elif {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= have:
        isa = "avx512_core"
    elif {"avx2", "avx_vnni"} <= have:
        isa = "avx2_vnni"
    elif "avx2" in have:
        isa = "avx2"
    else:
        isa = "below_avx2"
    if max_isa:
        cap = _ISA_ALIASES.get(max_isa.strip().lower(), max_isa.strip().lower())
        if cap in ONEDNN_ISAS and ONEDNN_ISAS.index(cap) < ONEDNN_ISAS.index(isa):
            isa = cap
    return isa


def _onednn_probe() -> str | None:
    """The kernel oneDNN picks for a bf16 matmul, as its verbose log names it (e.g. ``brg_matmul:avx10_1_512_amx``):
    what actually ran, AMX permission and all. One 64x64 product with verbose on, its C-level stdout captured;
    None where oneDNN is absent, does not log, or the platform has no file descriptors to redirect."""
    import ctypes
    import tempfile

    if not torch.backends.mkldnn.is_available():
        return None
    try:
        libc = ctypes.CDLL(None)
        sys.stdout.flush()
        saved = os.dup(1)
        with tempfile.TemporaryFile() as log:
            os.dup2(log.fileno(), 1)
            try:
                with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                    a = torch.ones(64, 64, dtype=torch.bfloat16)
                    a @ a
            finally:
                libc.fflush(None)
                os.dup2(saved, 1)
                os.close(saved)
            log.seek(0)
            text = log.read().decode(errors="replace")
    except (OSError, AttributeError, RuntimeError):
        return None
    for line in text.splitlines():
        parts = line.split(",")
        if "exec" in parts and "matmul" in parts:
            return parts[parts.index("matmul") + 1]
    return None


_PROBED: list[str | None] = []


def numerics(precision: str | None = None) -> dict:
    """What the low bits of a number depend on besides code and seed: the CPU's kernel-selecting flags, the ISA
    oneDNN and ATen dispatch to, environment overrides and the precision the run computed in (``precision``: fp32
    or bf16, the run's autocast setting; None when the caller does not know it). The thread count, the other
    input, is ``hardware.torch_threads`` and each run's own ``torch_threads``."""
    flags = cpu_flags()
    if not _PROBED:  # once per process: the probe is cheap, but oneDNN logs its header only once
        _PROBED.append(_onednn_probe())
    max_isa = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA")
    return {
        "cpu_flags": flags,
        "onednn_isa": onednn_isa(flags, max_isa) if flags else None,
        "onednn_bf16_matmul": _PROBED[0],
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "precision": precision,
        "env": {k: os.environ[k] for k in NUMERICS_ENV if k in os.environ},
    }


def precision_of(config) -> str:
    """The precision a run's config asks for: a ``precision`` key of its model or its paper's protocol (mmLayout's
    model.precision, EvoMoE-GPU's paper.protocol.precision: bf16 = torch.autocast to bfloat16); fp32 without one."""
    for section in ("model", ("paper", "protocol"), "paper"):
        node = config
        for key in (section,) if isinstance(section, str) else section:
            node = node.get(key) if hasattr(node, "get") else None
        value = node.get("precision") if hasattr(node, "get") else None
        if value is not None:
            return str(value)
    return "fp32"


def environment(git: dict | None = None, precision: str | None = None) -> dict:
    """How a result was made. ``git``: a git_state() taken earlier (the runner takes it at process start, so
    a commit made while a long protocol runs is not credited with numbers the older code produced).
    ``precision``: the run's compute precision (precision_of its config), recorded under ``numerics``."""
    return {
        "command": portable_paths(" ".join([Path(sys.argv[0]).name, *sys.argv[1:]])),
        **(git or git_state()),
        "versions": versions(),
        "hardware": {
            "cpu": cpu_model(),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        },
        "platform": platform.platform(),
        "numerics": numerics(precision),
        "allocator": allocator(),  # glibc's thresholds move wall times (shared/allocator.py), never the numbers
    }


def peak_memory_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
