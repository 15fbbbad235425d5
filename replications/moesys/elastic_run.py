"""A rank leaves and rejoins mid-run: two torchrun elastic agents ("nodes", one worker each) on this machine.

    python -m replications.moesys.elastic_run --workdir DIR [--steps 40 --leave-at 12 --rejoin-at 24]

Agent A hosts the c10d rendezvous store; agent B joins (``--nnodes=1:2``, ``--max-restarts``). Once rank 0
has logged step >= leave_at on 2 ranks, agent B and its worker are killed (SIGKILL of its process group:
a node that vanishes). A's worker fails in its next collective, A restarts it, the rendezvous completes
with A alone and the worker resumes from the last checkpoint on 1 rank. Once step >= rejoin_at is logged
on 1 rank, B is started again: A sees a node waiting, restarts its worker (a membership change, not a
failure), and both resume from the last checkpoint on 2 ranks until the end. The result: every log row
(redone steps included), the world size per step, and the same steps' losses from an uninterrupted
single-process run (elastic.train without a workdir).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from replications.moesys.elastic import LOG, NODE_ENV, train
from shared.paths import REPO_ROOT

RDZV = "join_timeout=60,last_call_timeout=2,close_timeout=5,keep_alive_interval=1,keep_alive_max_attempt=5"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_log(path: Path) -> list[dict[str, Any]]:
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a kill
    return rows


def agent(port: int, host: bool, params: dict[str, Any], workdir: Path, name: str, max_restarts: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1:2", "--nproc-per-node=1",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=moesys-elastic",
           f"--rdzv-conf={RDZV},is_host={int(host)}", f"--max-restarts={max_restarts}", "--monitor-interval=0.2",
           "-m", "replications.moesys.elastic", "--workdir", str(workdir), "--params", json.dumps(params)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO_ROOT), NODE_ENV: name,
           "LOGLEVEL": os.environ.get("MOESYS_AGENT_LOGLEVEL", "WARNING"),
           # torch 2.13's shared rendezvous TCPStore: a node that stays rank 0 across rounds does not publish
           # MASTER_ADDR for the new round, so a node joining later waits for it forever (seen here). The
           # documented opt-out builds the bootstrap info afresh every round.
           "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
    out = open(workdir / f"agent_{name}.log", "a")  # noqa: SIM115 (the child writes it until it exits)
    return subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def kill_node(proc: subprocess.Popen, workdir: Path, name: str) -> None:
    """SIGKILL an agent's process group and its worker (torchrun starts workers in their own session)."""
    worker = workdir / f"worker_{name}.pid"
    os.killpg(proc.pid, signal.SIGKILL)
    if worker.exists():
        try:
            os.kill(int(worker.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def _wait_for(log: Path, cond, procs: list[subprocess.Popen], deadline: float, what: str) -> None:
    while time.time() < deadline:
        if any(cond(r) for r in read_log(log)):
            return
        for p in procs:
            if p.poll() is not None and p.returncode != 0:
                raise RuntimeError(f"an agent exited with {p.returncode} while waiting for {what}")
        time.sleep(0.1)
    raise TimeoutError(f"timed out waiting for {what}")


def _tail(path: Path, n: int = 3000) -> str:
    return path.read_text()[-n:] if path.exists() else ""


def run(params: dict[str, Any], workdir: Path, leave_at: int, rejoin_at: int, max_restarts: int = 3,
        timeout: float = 120.0) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    params = {**params, "hold": {"world": 1, "step": rejoin_at, "seconds": timeout / 2}}
    for stale in [workdir / LOG, workdir / "checkpoint.pt", *workdir.glob("agent_*.log")]:
        stale.unlink(missing_ok=True)
    log, port, t0 = workdir / LOG, free_port(), time.time()
    deadline = t0 + timeout
    a = agent(port, True, params, workdir, "a", max_restarts)
    b = agent(port, False, params, workdir, "b", max_restarts)
    events = []
    try:
        _wait_for(log, lambda r: r["world"] == 2 and r["step"] >= leave_at, [a, b], deadline, "2 ranks")
        kill_node(b, workdir, "b")  # node B vanishes: its agent and worker die at once
        events.append({"event": "rank left", "time": time.time() - t0})
        _wait_for(log, lambda r: r["world"] == 1 and r["step"] >= rejoin_at, [a], deadline, "1 rank")
        # the worker now holds at step rejoin_at (params "hold") until the new node's arrival restarts it
        b = agent(port, False, params, workdir, "b2", max_restarts)
        events.append({"event": "rank rejoined", "time": time.time() - t0})
        for p in (a, b):
            p.wait(timeout=max(1.0, deadline - time.time()))
        if a.returncode != 0 or b.returncode != 0:
            raise RuntimeError(f"agents exited {a.returncode}, {b.returncode}:\n{_tail(workdir / 'agent_a.log')}")
    except (TimeoutError, RuntimeError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"{exc}\n--- agent a ---\n{_tail(workdir / 'agent_a.log')}\n--- agent b ---\n"
                           f"{_tail(workdir / 'agent_b.log')}") from exc
    finally:
        for p in (a, b):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    rows = read_log(log)
    final = {r["step"]: r for r in rows}  # the last time each step ran (steps after a checkpoint are redone)
    reference = {r["step"]: r["loss"] for r in train({**params, "step_sleep": 0.0, "hold": None})}
    curve = [final[s] for s in sorted(final)]
    worlds = [r["world"] for r in curve]
    phases = [w for i, w in enumerate(worlds) if i == 0 or w != worlds[i - 1]]
    return {"rows": rows, "curve": curve, "reference_loss": [reference[s] for s in sorted(final)],
            "phases": phases, "events": events, "seconds": time.time() - t0,
            "max_abs_diff": max(abs(r["loss"] - reference[r["step"]]) for r in curve),
            "resumes": sorted({(r["restart"], r["resumed_from"], r["world"], r["saved_by_world"]) for r in rows})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--params", default=None, help="JSON (elastic.py); default: the test's tiny model")
    parser.add_argument("--leave-at", type=int, default=12)
    parser.add_argument("--rejoin-at", type=int, default=24)
    args = parser.parse_args()
    params = json.loads(args.params) if args.params else TINY
    out = run(params, args.workdir, args.leave_at, args.rejoin_at)
    print(json.dumps({k: out[k] for k in ("phases", "events", "seconds", "max_abs_diff", "resumes")}, indent=1))


TINY: dict[str, Any] = {
    "seed": 1, "steps": 36, "global_batch": 8, "seq_len": 32, "ckpt_every": 5, "step_sleep": 0.05,
    "model": {"d_model": 32, "heads": 4, "layers": 2, "ffn_hidden": 64, "num_experts": 4, "lr": 3e-3,
              "aux_weight": 0.01, "gate": "switch", "gate_options": {"capacity_factor": 1.0}},
    "data": {"vocab": 64, "branching": 2, "chain_seed": 0},
}

if __name__ == "__main__":
    main()
