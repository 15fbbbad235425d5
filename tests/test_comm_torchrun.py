"""The three distributed MoE benchmarks under torchrun (env:// rendezvous, gloo on this CPU machine), the way they
run on real nodes: `torchrun --standalone --nproc_per_node=4 -m <worker> --out result.json`, each at its tiniest
size, held to the exactness checks their testbed tests apply (replications/moe/testbed.py runs the same modules):

- HetuMoE (replications.moe.comm_worker, 2 "nodes" of 2 via --ranks-per-node): the hierarchical all-to-all
  equals the flat one bit for bit, forward and backward (tests/test_moe_hierarchical.py's assert_exact);
- TA-MoE's dispatch replay (replications.ta_moe.replay_worker --check): every recorded matrix's rows reach the
  right ranks, counted and in order, and come back, and every matrix of every arm is timed;
- FlexMoE's replica all-to-all (replications.flexmoe.a2a_worker --check): every rank gets its replicas' share of
  each expert's rows, all rows arrive once, and the replica all-reduce is timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replications.flexmoe.a2a_bench import placements
from tests.test_moe_hierarchical import assert_exact

ROOT = Path(__file__).resolve().parents[1]
TORCHRUN = Path(sys.executable).parent / "torchrun"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not TORCHRUN.exists(), reason=f"no torchrun next to {sys.executable}")]


def torchrun(module: str, *args: object, out: Path) -> list:
    """Every rank's result (rank order) from 4 torchrun ranks of `module`; fails with the ranks' output."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    env.pop("MOE_TESTBED_OUT", None)  # the torchrun path, not the testbed's
    cmd = [str(TORCHRUN), "--standalone", "--nproc_per_node=4", "-m", module, *map(str, args), "--out", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return json.loads(out.read_text())


def test_hetumoe_hierarchical_all_to_all(tmp_path):
    outs = torchrun("replications.moe.comm_worker", "--sizes", 1024, "--reps", 1, "--warmup", 0,
                    "--ranks-per-node", 2, "--a2a-trials", 2, out=tmp_path / "comm.json")
    assert_exact(outs, 2, 2)
    assert {r["op"] for r in outs[0]["rows"]} == {"flat", "hier", "hier_net", "hier_copy", "p2p_intra", "p2p_inter"}
    assert all(o["N"] == 2 and o["G"] == 2 for o in outs)


def test_ta_moe_replay(tmp_path):
    m = [[3, 1, 0, 2], [1, 1, 1, 1], [0, 0, 4, 0], [2, 2, 2, 2]]
    empty_rows = [[0, 0, 0, 0], [5, 0, 0, 1], [0, 0, 0, 0], [1, 0, 7, 0]]  # ranks that send or receive nothing
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"d_model": 8, "warmup": 1, "arms": {"a": [m, empty_rows], "b": [m]}}))
    outs = torchrun("replications.ta_moe.replay_worker", "--plan", plan, "--ranks-per-node", 2, "--check",
                    out=tmp_path / "replay.json")
    assert all(o["checks"] == {"a": [True, True], "b": [True]} for o in outs), [o["checks"] for o in outs]
    times = outs[0]["times"]
    assert len(times["a"]) == 2 and len(times["b"]) == 1 and all(t > 0 for t in times["a"])


def test_flexmoe_replica_all_to_all(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"tokens_per_rank": 64, "d_model": 8, "d_hidden": 16, "hot_shares": [0.7],
                                "placements": placements(4, {"replicated": [0, 2]}), "trials": 2, "warmup": 1}))
    outs = torchrun("replications.flexmoe.a2a_worker", "--plan", plan, "--check", out=tmp_path / "replica.json")
    want = {"static": {"0.7": True}, "replicated": {"0.7": True}}
    assert all(o["checks"] == want for o in outs), [o["checks"] for o in outs]
    assert set(outs[0]["a2a"]) == {"static", "replicated"} and len(outs[0]["a2a"]["static"]["0.7"]) == 2
    assert len(outs[0]["allreduce"]["replicated/expert0"]) == 2
