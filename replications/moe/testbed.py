"""An emulated multi-node cluster on one machine: N "nodes" as Linux network namespaces, G gloo ranks each.

    reason = testbed_unavailable_reason()        # None when root + ip netns + tc work, else why not
    with EmulatedCluster(nodes=2, ranks_per_node=2, inter_rate_mbit=400) as cluster:   # None = unshaped
        outs = cluster.run("some.worker.module", args=["--x", "1"], timeout_s=120)   # per-rank JSON results

Inside the worker module: ``rank, world, node = worker_init()`` (a gloo process group from the environment
the cluster set) and ``worker_emit({...})`` (this rank's JSON result, returned by ``cluster.run``).
The same worker runs under torchrun on real nodes (env:// rendezvous, NCCL on GPUs) when its parser has
``add_worker_args`` and it calls ``worker_init(args=args)``:

    torchrun --standalone --nproc_per_node=4 -m some.worker.module --ranks-per-node 2 --out result.json

Topology: every node namespace has one veth (``eth0``, address 169.254.<run>.<node+1>) into a bridge that
lives in a namespace of its own; nothing is attached to the host namespace. Ranks of one node talk over
the node's loopback (unshaped); traffic between nodes crosses two veths. With ``inter_rate_mbit`` each
node's link is shaped to that rate in both directions (tc tbf on the node's egress and on the bridge port
towards the node), a full-duplex NIC shared by the node's G ranks. The kernel here has no ``netem``: link
latency cannot be added, only bandwidth.

Python 3.11 has no os.setns, so each rank is ``ip netns exec <ns> python -m <module>``. Namespace names
carry the creating pid; everything is deleted on exit, on exceptions and on SIGINT/SIGTERM, and namespaces
left by a process that died without cleaning up (SIGKILL) are removed by the next cluster.

``LocalCluster`` has the same ``run`` interface with plain subprocesses on 127.0.0.1 (no namespaces, no
shaping): the same worker modules run anywhere torch.distributed's gloo does.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shared.paths import REPO_ROOT as ROOT

if TYPE_CHECKING:
    import torch

PREFIX = "moetb"  # every namespace this module creates is named moetb<pid>_<k>_<role>
PORT = 29500  # inside the namespaces nothing else listens
QUEUE_MS = 50  # tbf queue bound
_counter = itertools.count()


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode:
        raise RuntimeError(f"`ip {' '.join(args)}` failed: {proc.stderr.strip()}")
    return proc


def _tc(ns: str, *args: str) -> None:
    proc = subprocess.run(["ip", "netns", "exec", ns, "tc", *args], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"`tc {' '.join(args)}` in {ns} failed: {proc.stderr.strip()}")


def _namespaces() -> list[str]:
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def our_namespaces(pid: int | None = None) -> list[str]:
    """Namespaces created by this module (by process `pid`, or by any process)."""
    pat = re.compile(rf"^{PREFIX}(\d+)_")
    return [ns for ns in _namespaces() if (m := pat.match(ns)) and (pid is None or int(m.group(1)) == pid)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale() -> list[str]:
    """Delete namespaces whose creating process no longer exists; returns their names."""
    gone = []
    for ns in our_namespaces():
        pid = int(re.match(rf"^{PREFIX}(\d+)_", ns).group(1))
        if not _alive(pid):
            _ip("netns", "del", ns, check=False)
            gone.append(ns)
    return gone


@functools.cache
def testbed_unavailable_reason() -> str | None:
    """None when namespaces, veths, a bridge and tc tbf work here; else a one-line reason to skip with."""
    if not sys.platform.startswith("linux"):
        return f"the emulated cluster needs Linux network namespaces (this is {sys.platform})"
    if os.geteuid() != 0:
        return "the emulated cluster needs root (ip netns add); run as root or on a real cluster"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"`{tool}` (iproute2) is not installed"
    ns = f"{PREFIX}{os.getpid()}_probe{next(_counter)}"
    try:
        _ip("netns", "add", ns)
        _ip("-n", ns, "link", "add", "p0", "type", "veth", "peer", "name", "p1")
        _ip("-n", ns, "link", "add", "b0", "type", "bridge")
        _tc(ns, "qdisc", "add", "dev", "p0", "root", "tbf", "rate", "100mbit", "burst", "64kbit", "latency", "50ms")
    except (RuntimeError, OSError) as err:
        return f"network namespaces do not work here: {err}"
    finally:
        _ip("netns", "del", ns, check=False)
    return None


def _burst_kbit(rate_mbit: float) -> int:
    # tbf needs burst >= rate / HZ; 10 ms of traffic (at least 256 kbit) keeps it smooth at every rate here
    return max(256, int(rate_mbit * 10))


def _shape(ns: str, dev: str, rate: str, burst: str) -> None:
    """Egress of `dev` limited to `rate` by a token bucket (a 100 Mbit/s link thus queues <= QUEUE_MS)."""
    _tc(ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", burst, "latency", f"{QUEUE_MS}ms")


class _Launcher:
    """What both clusters share: start W ranks with their environment, wait, collect JSON, kill on failure."""

    nodes: int
    ranks_per_node: int

    @property
    def world(self) -> int:
        return self.nodes * self.ranks_per_node

    def _command(self, node: int, module: str, args: list[str]) -> list[str]:
        return [sys.executable, "-m", module, *args]

    def _env(self, rank: int, node: int) -> dict[str, str]:
        raise NotImplementedError

    def run(self, module: str, args: list[str] | None = None, timeout_s: float = 120,
            env: dict[str, str] | None = None) -> list[Any]:
        """Run `python -m module args` as every rank; returns each rank's worker_emit value, in rank order.
        Raises RuntimeError (with the failing rank's stderr) if a rank fails or the run times out."""
        args = [str(a) for a in (args or [])]
        with tempfile.TemporaryDirectory(prefix="moetb-out-") as out:
            procs, logs = [], []
            try:
                for rank in range(self.world):
                    node = rank // self.ranks_per_node
                    log = open(Path(out) / f"rank{rank}.log", "w+")  # noqa: SIM115 (closed below)
                    logs.append(log)
                    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT),
                                **self._env(rank, node), "MOE_TESTBED_OUT": out, **(env or {})}
                    procs.append(subprocess.Popen(self._command(node, module, args), cwd=ROOT, env=full_env,
                                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
                deadline = time.monotonic() + timeout_s
                failed = None
                while failed is None and any(p.poll() is None for p in procs):
                    failed = next((r for r, p in enumerate(procs) if p.poll() not in (None, 0)), None)
                    if time.monotonic() > deadline:
                        failed = next(r for r, p in enumerate(procs) if p.poll() is None)
                        break
                    time.sleep(0.02)
                if failed is None:
                    failed = next((r for r, p in enumerate(procs) if p.returncode), None)
                if failed is not None:
                    timed_out = procs[failed].poll() is None
                    _kill(procs)
                    logs[failed].seek(0)
                    tail = logs[failed].read()[-3000:]
                    what = f"timed out after {timeout_s:.0f} s" if timed_out else f"exited {procs[failed].returncode}"
                    raise RuntimeError(f"rank {failed} of `{module}` {what}:\n{tail}")
            finally:
                _kill(procs)
                for log in logs:
                    log.close()
            results = []
            for rank in range(self.world):
                path = Path(out) / f"rank{rank}.json"
                if not path.exists():
                    raise RuntimeError(f"rank {rank} of `{module}` exited 0 without calling worker_emit")
                results.append(json.loads(path.read_text()))
            return results


def _kill(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for p in procs:
        p.wait()


class EmulatedCluster(_Launcher):
    def __init__(self, nodes: int = 2, ranks_per_node: int = 2, inter_rate_mbit: float | None = None):
        if nodes < 1 or ranks_per_node < 1:
            raise ValueError(f"nodes ({nodes}) and ranks_per_node ({ranks_per_node}) must be >= 1")
        if nodes > 250:
            raise ValueError(f"at most 250 nodes (one 169.254.x.0/24 subnet), got {nodes}")
        if inter_rate_mbit is not None and inter_rate_mbit <= 0:
            raise ValueError(f"inter_rate_mbit must be positive or None (unshaped), got {inter_rate_mbit}")
        self.nodes, self.ranks_per_node, self.inter_rate_mbit = nodes, ranks_per_node, inter_rate_mbit
        self.tag = f"{PREFIX}{os.getpid()}_{next(_counter)}"
        self.subnet = 10 + int(self.tag.split("_")[1]) % 240  # 169.254.<subnet>.0/24
        self.bridge_ns = f"{self.tag}_br"
        self.node_ns = [f"{self.tag}_n{i}" for i in range(nodes)]
        self._handlers: dict[int, Any] = {}

    def address(self, node: int) -> str:
        return f"169.254.{self.subnet}.{node + 1}"

    def __enter__(self) -> EmulatedCluster:
        reason = testbed_unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        remove_stale()
        for sig in (signal.SIGINT, signal.SIGTERM):  # clean up, then behave as before
            self._handlers[sig] = signal.signal(sig, self._on_signal)
        try:
            self._create()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _on_signal(self, signum, frame) -> None:
        self.close()
        previous = self._handlers.get(signum)
        if callable(previous):
            previous(signum, frame)
        raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)

    def _create(self) -> None:
        br = self.bridge_ns
        _ip("netns", "add", br)
        _ip("-n", br, "link", "add", "br0", "type", "bridge")
        _ip("-n", br, "link", "set", "br0", "up")
        for i, ns in enumerate(self.node_ns):
            _ip("netns", "add", ns)
            # created inside the bridge namespace, the peer moved straight into the node: never on the host
            _ip("-n", br, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("-n", br, "link", "set", f"v{i}", "master", "br0")
            _ip("-n", br, "link", "set", f"v{i}", "up")
            _ip("-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            if self.inter_rate_mbit is not None:
                rate = f"{self.inter_rate_mbit}mbit"
                burst = f"{_burst_kbit(self.inter_rate_mbit)}kbit"
                for where, dev in ((ns, "eth0"), (br, f"v{i}")):  # node -> bridge and bridge -> node
                    _shape(where, dev, rate, burst)

    def close(self) -> None:
        """Delete every namespace of this cluster (idempotent); restores the signal handlers."""
        for ns in [*self.node_ns, self.bridge_ns]:
            if ns in _namespaces():
                _ip("netns", "del", ns, check=False)
        for sig, handler in self._handlers.items():
            signal.signal(sig, handler)
        self._handlers.clear()

    def _command(self, node: int, module: str, args: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.node_ns[node], sys.executable, "-m", module, *args]

    def _env(self, rank: int, node: int) -> dict[str, str]:
        return {"MASTER_ADDR": self.address(0), "MASTER_PORT": str(PORT), "RANK": str(rank),
                "WORLD_SIZE": str(self.world), "LOCAL_RANK": str(rank % self.ranks_per_node),
                "LOCAL_WORLD_SIZE": str(self.ranks_per_node), "NODE_RANK": str(node), "NNODES": str(self.nodes),
                "GLOO_SOCKET_IFNAME": "eth0", "MOE_TESTBED_RATE_MBIT": str(self.inter_rate_mbit or 0)}


class LocalCluster(_Launcher):
    """The same launch interface without namespaces: every rank on 127.0.0.1, no shaping ("nodes" are only
    the rank grouping the hierarchical all-to-all uses)."""

    def __init__(self, nodes: int = 2, ranks_per_node: int = 2):
        if nodes < 1 or ranks_per_node < 1:
            raise ValueError(f"nodes ({nodes}) and ranks_per_node ({ranks_per_node}) must be >= 1")
        self.nodes, self.ranks_per_node, self.inter_rate_mbit = nodes, ranks_per_node, None
        self.port = 0

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def run(self, module: str, args: list[str] | None = None, timeout_s: float = 120,
            env: dict[str, str] | None = None) -> list[Any]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        return super().run(module, args, timeout_s, env)

    def _env(self, rank: int, node: int) -> dict[str, str]:
        return {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(self.port), "RANK": str(rank),
                "WORLD_SIZE": str(self.world), "LOCAL_RANK": str(rank % self.ranks_per_node),
                "LOCAL_WORLD_SIZE": str(self.ranks_per_node), "NODE_RANK": str(node), "NNODES": str(self.nodes),
                "GLOO_SOCKET_IFNAME": "lo", "MOE_TESTBED_RATE_MBIT": "0"}


# The worker side. A rank learns everything from its environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
# MASTER_ADDR/PORT), which the clusters above set and torchrun sets alike, so one worker module runs in both.
_WORKER: dict[str, Any] = {}  # this rank's launch settings, filled by worker_init


def add_worker_args(parser: argparse.ArgumentParser) -> None:
    """The launch flags every worker takes; they matter under torchrun (the clusters above need none)."""
    parser.add_argument("--ranks-per-node", type=int,
                        help="G, ranks per node (default LOCAL_WORLD_SIZE): lets one machine's torchrun act as N x G")
    parser.add_argument("--backend", choices=["gloo", "nccl"],
                        help="default: nccl on a GPU under torchrun, gloo on CPU and always in the emulated cluster")
    parser.add_argument("--out", help="rank 0 writes every rank's result, in rank order, to this JSON file "
                                      "(what cluster.run returns)")


def worker_init(timeout_s: float = 120, args: argparse.Namespace | None = None) -> tuple[int, int, int]:
    """In a rank started by a cluster or by torchrun: the default process group, env:// rendezvous.
    Returns (rank, world size, node); node = rank // G (torchrun and the clusters number ranks node by node)."""
    import datetime

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    G = getattr(args, "ranks_per_node", None) or int(os.environ.get("LOCAL_WORLD_SIZE", world))
    if G < 1 or world % G:
        raise ValueError(f"world size {world} is not a multiple of ranks per node {G}")
    # NCCL only where torchrun starts ranks on GPUs: the emulated cluster's namespaces carry gloo's TCP only
    backend = getattr(args, "backend", None) or (
        "nccl" if torch.cuda.is_available() and "MOE_TESTBED_OUT" not in os.environ else "gloo")
    _WORKER.update(ranks_per_node=G, backend=backend, out=getattr(args, "out", None))
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    if not dist.is_initialized():
        dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout_s))
    return rank, world, rank // G


def ranks_per_node() -> int:
    """G of this rank's layout: --ranks-per-node, else LOCAL_WORLD_SIZE (the cluster's G, torchrun's per node)."""
    return int(_WORKER.get("ranks_per_node") or os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))


def worker_device() -> torch.device:
    """Where a worker's tensors go: this rank's GPU under NCCL (it moves CUDA tensors only), else the CPU."""
    import torch

    if _WORKER.get("backend") == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def settle() -> None:
    """Wait for the GPU's queued work before reading a clock: NCCL calls return before their transfer ends.
    Nothing to wait for on CPU (gloo calls return when done)."""
    if _WORKER.get("backend") == "nccl":
        import torch

        torch.cuda.synchronize()


def worker_emit(result: Any) -> None:
    """This rank's JSON-serialisable result, returned by cluster.run (written atomically); the rank's last call.
    Under torchrun it goes to --out (every rank's, gathered on rank 0), else it is printed.
    It also ends the rank's process group (after a barrier): a gloo group left to the interpreter's exit can
    abort the process ("terminate called without an active exception") on a loaded machine."""
    import torch.distributed as dist

    out = os.environ.get("MOE_TESTBED_OUT")
    rank = int(os.environ.get("RANK", "0"))
    if out is not None:
        _write_json(Path(out) / f"rank{rank}.json", result)
    if _WORKER.get("out"):
        every = [None] * dist.get_world_size() if rank == 0 else None
        dist.gather_object(result, every, dst=0)
        if rank == 0:
            _write_json(Path(_WORKER["out"]), every)
    elif out is None:  # started by hand or by torchrun without --out
        print(json.dumps({"rank": rank, "result": result}))
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)
