"""Ring-memory inference (SE-MoE / MoESys), as RECONSTRUCTED in the fact sheet (the released code was not found).

The model's S sections (equal runs of blocks) live in slower storage; k resident slots form a ring. Pass after
pass (one pass = every section over one batch), step g computes section g mod S in slot g mod k while the
section of step g + k - 1 is loaded into slot (g - 1) mod k, the slot step g - 1 has just finished with.
So k = 1 is load-then-compute (nothing overlaps), k >= 2 overlaps one load with each compute, and k >= S keeps
every section in its own slot: after the first pass nothing is loaded again (the fully resident model).

Storage and copies: on CPU, sections are read from a file (``FileStore``: ``os.preadv``, which releases the
GIL) by one loader thread; on a GPU, from pinned host memory (``HostStore``) by ``copy_(non_blocking=True)``
on a second CUDA stream, with events ordering each copy after the compute that last used its slot.
Slot weights are views into one flat byte buffer per slot, laid out exactly as in storage (``Layout``).
"""

from __future__ import annotations

import copy
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from shared.atomic import atomic_path

ALIGN = 64  # bytes between tensors in a section: the CPU allocator's alignment, so kernels see the same layout
PAGE = 4096  # a section starts on a page: page-cache eviction and reads work in whole pages
CHUNK = 16 << 20  # bytes per preadv call


@dataclass(frozen=True)
class Entry:
    name: str  # state_dict key inside a section
    shape: tuple[int, ...]
    dtype: torch.dtype
    offset: int
    nbytes: int


@dataclass(frozen=True)
class Layout:
    entries: tuple[Entry, ...]
    stride: int  # bytes per section (page-aligned)


def _round(n: int, to: int) -> int:
    return -(-n // to) * to


def layout_of(section: nn.Module) -> Layout:
    """Where each parameter and buffer of a section sits in its flat byte image."""
    entries, offset = [], 0
    for name, t in section.state_dict(keep_vars=True).items():
        nbytes = t.numel() * t.element_size()
        entries.append(Entry(name, tuple(t.shape), t.dtype, offset, nbytes))
        offset = _round(offset + nbytes, ALIGN)
    return Layout(tuple(entries), _round(max(offset, 1), PAGE))


def pack(section: nn.Module, layout: Layout) -> np.ndarray:
    """A section's bytes laid out as `layout` says (zero padding between tensors)."""
    out = np.zeros(layout.stride, dtype=np.uint8)
    state = section.state_dict()
    for e in layout.entries:
        t = state[e.name].detach().cpu().contiguous()
        if tuple(t.shape) != e.shape or t.dtype != e.dtype:
            raise ValueError(f"section tensor {e.name} is {tuple(t.shape)} {t.dtype}; the layout says {e.shape} "
                             f"{e.dtype}: every section must have the same structure")
        out[e.offset:e.offset + e.nbytes] = t.reshape(-1).view(torch.uint8).numpy()
    return out


def bind(section: nn.Module, layout: Layout, buffer: Tensor) -> nn.Module:
    """A copy of `section` whose parameters and buffers are views into `buffer` (uint8, layout.stride bytes)."""
    slot = copy.deepcopy(section).to(buffer.device)
    for e in layout.entries:
        view = buffer[e.offset:e.offset + e.nbytes].view(e.dtype).view(e.shape)
        owner, _, leaf = e.name.rpartition(".")
        module = slot.get_submodule(owner) if owner else slot
        if leaf in module._parameters:
            module._parameters[leaf] = nn.Parameter(view, requires_grad=False)
        else:
            module._buffers[leaf] = view
    return slot


class FileStore:
    """Every section's bytes in one file (section s at s * stride): the 'slower storage' on CPU.

    ``drop_after_read``: evict each section's pages from the page cache right after reading them
    (posix_fadvise DONTNEED), so every load is a read from the storage device, not a memory copy."""

    def __init__(self, path: Path, layout: Layout, sections: int, drop_after_read: bool = False):
        self.path, self.layout, self.sections, self.drop_after_read = Path(path), layout, sections, drop_after_read
        size = self.path.stat().st_size
        if size != sections * layout.stride:
            raise ValueError(f"{path} holds {size} bytes; {sections} sections of {layout.stride} bytes expected "
                             "(written for another model? rewrite it with FileStore.write)")
        self.fd = os.open(self.path, os.O_RDONLY)

    @staticmethod
    def write(path: Path, sections: list[nn.Module]) -> Layout:
        layout = layout_of(sections[0])
        with atomic_path(Path(path)) as tmp, open(tmp, "wb") as f:
            for s in sections:
                f.write(pack(s, layout).tobytes())
            f.flush()
            os.fsync(f.fileno())  # clean pages: the page cache can then drop them
        return layout

    def read_into(self, section: int, dst: Tensor) -> None:
        view = memoryview(dst.numpy())
        base, n, done = section * self.layout.stride, self.layout.stride, 0
        while done < n:
            got = os.preadv(self.fd, [view[done:min(done + CHUNK, n)]], base + done)
            if got <= 0:
                raise OSError(f"short read from {self.path} at byte {base + done}")
            done += got
        if self.drop_after_read:
            os.posix_fadvise(self.fd, base, n, os.POSIX_FADV_DONTNEED)

    def drop_cache(self) -> None:
        os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_DONTNEED)

    def close(self) -> None:
        os.close(self.fd)


class HostStore:
    """Every section's bytes in (pinned, where CUDA exists) host memory: the 'slower storage' for a GPU."""

    def __init__(self, sections: list[nn.Module], pin: bool = True):
        self.layout, self.sections = layout_of(sections[0]), len(sections)
        host = torch.from_numpy(np.stack([pack(s, self.layout) for s in sections]))
        self.host = host.pin_memory() if pin and torch.cuda.is_available() else host

    def read_into(self, section: int, dst: Tensor) -> None:
        dst.copy_(self.host[section], non_blocking=dst.is_cuda)


class RingMemory:
    """Run an MoEStack's passes with its sections streamed through k slots (embedding and head stay resident).

    ``log`` records every load and compute: op, step g, pass, section, slot and times (perf_counter seconds on
    CPU; CUDA events on a GPU, read with ``timings()`` after a synchronize)."""

    def __init__(self, model: nn.Module, store: Any, k: int, device: torch.device | str = "cpu"):
        if k < 1:
            raise ValueError(f"ring memory needs k >= 1 slots, got {k}")
        self.model, self.store, self.device = model, store, torch.device(device)
        self.S = len(model.sections)
        if store.sections != self.S:
            raise ValueError(f"the store holds {store.sections} sections, the model has {self.S}")
        self.k = min(k, self.S)  # more slots than sections: each section keeps its own slot
        layout = store.layout
        self.buffers = [torch.empty(layout.stride, dtype=torch.uint8, device=self.device) for _ in range(self.k)]
        self.slots = [bind(model.sections[0], layout, b).eval() for b in self.buffers]
        self.held = [-1] * self.k  # which section each slot holds (or is being loaded with)
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            self.copy_stream = torch.cuda.Stream(self.device)
            self.freed: list[Any] = [None] * self.k  # event: the last compute in this slot finished
        else:
            self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ring-loader")
        self.log: list[dict[str, Any]] = []

    # ---- loading -------------------------------------------------------------------------------------
    def _read(self, entry: dict[str, Any]) -> None:
        entry["t0"] = time.perf_counter()
        self.store.read_into(entry["section"], self.buffers[entry["slot"]])
        entry["t1"] = time.perf_counter()

    def _issue(self, g: int) -> Future | Any | None:
        section, slot = g % self.S, g % self.k
        if self.held[slot] == section:
            return None  # already there (k >= S after the first pass)
        self.held[slot] = section
        entry = {"op": "load", "g": g, "pass": g // self.S, "section": section, "slot": slot}
        self.log.append(entry)
        if not self.cuda:
            return self.pool.submit(self._read, entry)
        with torch.cuda.stream(self.copy_stream):
            if self.freed[slot] is not None:
                self.copy_stream.wait_event(self.freed[slot])  # never overwrite weights still being read
            entry["ev0"] = torch.cuda.Event(enable_timing=True)
            entry["ev1"] = torch.cuda.Event(enable_timing=True)
            entry["ev0"].record()
            self.store.read_into(section, self.buffers[slot])
            entry["ev1"].record()
        return entry["ev1"]

    def _wait(self, handle: Future | Any | None) -> None:
        if handle is None:
            return
        if self.cuda:
            torch.cuda.current_stream(self.device).wait_event(handle)
        else:
            handle.result()

    # ---- the ring ------------------------------------------------------------------------------------
    @torch.no_grad()
    def run(self, batches: list[Tensor]) -> list[Tensor]:
        """Logits of each batch; pass p computes sections 0..S-1 on batches[p]."""
        total, pending = len(batches) * self.S, {}
        for g in range(min(self.k - 1, total)):  # fill the ring ahead of the first compute
            pending[g] = self._issue(g)
        outs, x = [], None
        for g in range(total):
            p, section, slot = g // self.S, g % self.S, g % self.k
            if g + self.k - 1 < total:
                pending[g + self.k - 1] = self._issue(g + self.k - 1)  # overlaps this compute (k >= 2)
            self._wait(pending.pop(g, None))
            entry = {"op": "compute", "g": g, "pass": p, "section": section, "slot": slot}
            self._stamp(entry, "0")
            if section == 0:
                x = self.model.embed_tokens(batches[p].to(self.device))
            x, _ = self.slots[slot](x)
            if section == self.S - 1:
                outs.append(self.model.logits(x))
            self._stamp(entry, "1")
            if self.cuda:
                self.freed[slot] = entry["ev1"]
            self.log.append(entry)
        return outs

    def _stamp(self, entry: dict[str, Any], which: str) -> None:
        if self.cuda:
            entry["ev" + which] = torch.cuda.Event(enable_timing=True)
            entry["ev" + which].record()
        else:
            entry["t" + which] = time.perf_counter()

    def timings(self) -> list[dict[str, Any]]:
        """The log with durations in seconds (``seconds``); on a GPU call after torch.cuda.synchronize()."""
        out = []
        for e in self.log:
            row = {k: v for k, v in e.items() if k not in ("ev0", "ev1")}
            if "ev0" in e:
                row["seconds"] = e["ev0"].elapsed_time(e["ev1"]) / 1e3
            else:
                row["seconds"] = e["t1"] - e["t0"]
            out.append(row)
        return out

    def close(self) -> None:
        if not self.cuda:
            self.pool.shutdown(wait=True)
