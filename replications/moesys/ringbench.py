"""Throughput of ring-memory inference: fully resident vs load-then-compute (k = 1) vs the ring (k = 2..4).

Every configuration runs `passes` batches, `repeats` times, interleaved (configuration inside repeat) so
machine drift hits every configuration alike; the median wall time counts. Beside each measured throughput
sits a MODELLED one from the fact sheet's formula, with the measured per-section times:
    k = 1:  time per pass = sum_i (compute_i + load_i)
    k >= 2: time per pass = sum_i max(compute_i, load_{(i + k - 1) mod S})
plus the resident embedding/head time. compute_i: the median per-section time of the resident runs (every
pass of every repeat); load_i: the median per-section load time of the k = 1 runs (loads alone, nothing
computing beside them).

Storages: "storage" = the section file with its pages evicted from the page cache before each run and after
each read (posix_fadvise DONTNEED): each load reads the storage device. "page_cache" = the same file kept in
the page cache: each load is a kernel memory copy (the nearest CPU stand-in for a host->GPU copy). "host" (GPU):
pinned host memory copied on a second CUDA stream.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import torch

from replications.moesys.model import MoEStack
from replications.moesys.ring import FileStore, HostStore, RingMemory


def build_model(p: dict[str, Any], seed: int, device: str = "cpu") -> MoEStack:
    torch.manual_seed(seed)
    m = MoEStack(p["vocab"], p["d_model"], p["heads"], p["layers"], p["sections"], p["ffn_hidden"],
                 p["num_experts"], max(s[1] for s in p["settings"]), p.get("gate", "switch"))
    return m.to(device).eval()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.no_grad()
def time_resident(model: MoEStack, batches: list[torch.Tensor], device: torch.device):
    """(wall seconds, per-section seconds of every pass [pass][section], outputs) of the fully resident model."""
    _sync(device)
    t0, outs, passes = time.perf_counter(), [], []
    for b in batches:
        x, per = model.embed_tokens(b.to(device)), []
        passes.append(per)
        for s in model.sections:
            if device.type == "cuda":
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                x, _ = s(x)
                e1.record()
                per.append((e0, e1))
            else:
                t = time.perf_counter()
                x, _ = s(x)
                per.append(time.perf_counter() - t)
        outs.append(model.logits(x))
    _sync(device)
    wall = time.perf_counter() - t0
    if device.type == "cuda":
        passes = [[a.elapsed_time(b) / 1e3 for a, b in per] for per in passes]
    return wall, passes, outs


def time_ring(model: MoEStack, store: Any, k: int, batches: list[torch.Tensor], device: torch.device):
    ring = RingMemory(model, store, k, device)
    _sync(device)
    t0 = time.perf_counter()
    outs = ring.run(batches)
    _sync(device)
    wall = time.perf_counter() - t0
    ring.close()
    return wall, ring.timings(), outs


def resident_bytes(path: Path) -> int | None:
    """Bytes of `path` in the page cache now (util-linux fincore), None where it is missing."""
    if shutil.which("fincore") is None:
        return None
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                         capture_output=True, text=True)
    return int(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip().isdigit() else None


def modelled_seconds(compute: list[float], load: list[float], k: int, S: int, other: float) -> float:
    if k == 1:
        return sum(c + ld for c, ld in zip(compute, load)) + other
    if k >= S:
        return sum(compute) + other  # resident after the first pass
    return sum(max(compute[i], load[(i + k - 1) % S]) for i in range(S)) + other


def bench(p: dict[str, Any], model: MoEStack, stores: dict[str, Any], device: torch.device,
          seed: int, progress=print) -> dict[str, Any]:
    """Every (setting, configuration) measured; see the module docstring. stores: name -> (store, prepare)."""
    S, out = len(model.sections), {"settings": []}
    exact = True
    for batch, seq in p["settings"]:
        g = torch.Generator().manual_seed(seed)
        batches = [torch.randint(0, p["vocab"], (batch, seq), generator=g) for _ in range(p["passes"])]
        tokens = batch * seq * p["passes"]
        configs = [("resident", None, None)] + [(name, name, k) for name in stores for k in p["ks"]]
        walls: dict[str, list[float]] = {}
        logs: dict[str, list] = {}
        resident_out, section_times = None, []
        time_resident(model, batches[:1], device)  # warm-up: allocator, kernels
        for r in range(p["repeats"]):
            for label, sname, k in configs:
                key = label if k is None else f"{label}/k{k}"
                if k is None:
                    wall, per, outs = time_resident(model, batches, device)
                    section_times += per
                    resident_out = outs
                else:
                    store, prepare = stores[sname]
                    prepare()
                    wall, log, outs = time_ring(model, store, k, batches, device)
                    logs.setdefault(key, []).append(log)
                    exact &= all(torch.equal(a, b) for a, b in zip(outs, resident_out, strict=True))
                walls.setdefault(key, []).append(wall)
            progress(f"  setting {batch}x{seq}: repeat {r + 1}/{p['repeats']} done")
        med = {key: statistics.median(v) for key, v in walls.items()}
        compute = [statistics.median(p[i] for p in section_times) for i in range(S)]  # every pass, every repeat
        resident_s = med["resident"]
        other = resident_s / p["passes"] - sum(compute)  # embedding + head + Python per pass
        rows = [{"config": "resident", "storage": None, "k": None, "seconds": resident_s, "seconds_all": walls["resident"],
                 "tokens_per_s": tokens / resident_s, "modelled_tokens_per_s": None}]
        setting = {"batch": batch, "seq_len": seq, "tokens_per_pass": batch * seq, "passes": p["passes"],
                   "compute_per_section_s": compute, "other_per_pass_s": other}
        for sname in stores:
            iso = [e for run in logs[f"{sname}/k1"] for e in run if e["op"] == "load"]
            load = [statistics.median(e["seconds"] for e in iso if e["section"] == s) for s in range(S)]
            setting.setdefault("load_per_section_s", {})[sname] = load
            section_bytes = stores[sname][0].layout.stride
            for k in p["ks"]:
                key = f"{sname}/k{k}"
                loads = [e for run in logs[key] for e in run if e["op"] == "load"]
                busy = sum(e["seconds"] for e in loads)
                model_s = modelled_seconds(compute, load, k, S, other) * p["passes"]
                rows.append({"config": "load_then_compute" if k == 1 else f"ring_k{k}", "storage": sname, "k": k,
                             "seconds": med[key], "seconds_all": walls[key], "tokens_per_s": tokens / med[key],
                             "modelled_tokens_per_s": tokens / model_s,
                             "loads_per_pass": len(loads) / len(logs[key]) / p["passes"],
                             "read_gb_per_s": len(loads) * section_bytes / busy / 1e9 if busy else None})
        setting["rows"] = rows
        out["settings"].append(setting)
    out["exact"] = exact
    return out


def cpu_stores(model: MoEStack, folder: Path) -> tuple[dict[str, Any], Path]:
    """The section file and its two storages on CPU: evicted (storage device) and page-cached (memory copy)."""
    path = folder / "sections.bin"
    layout = FileStore.write(path, list(model.sections))
    cold = FileStore(path, layout, len(model.sections), drop_after_read=True)
    warm = FileStore(path, layout, len(model.sections))
    buf = torch.empty(layout.stride, dtype=torch.uint8)

    def warm_up() -> None:
        for s in range(len(model.sections)):
            warm.read_into(s, buf)

    return {"storage": (cold, cold.drop_cache), "page_cache": (warm, warm_up)}, path


def gpu_stores(model: MoEStack) -> dict[str, Any]:
    host = HostStore(list(model.sections))  # pack() copies each section to host memory
    return {"host": (host, lambda: None)}


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]
