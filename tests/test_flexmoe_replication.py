"""FlexMoE's replicated experts (replications/flexmoe/replicated.py) on 4 gloo processes: loss and every gradient
equal the unreplicated single-process layer's, for static, replicated and migrated placements, with Switch
and GShard routing; replicas hold identical gradients; a replica takes part of its expert's tokens; and the
missing replica all-reduce (the bug the design guards against) is caught."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from replications.flexmoe.replica_check import GATES, PLACEMENTS
from replications.flexmoe.replicated import check_placement, slot_counts, split_rows

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(out: Path, *extra: str, world: int = 4) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    if world == 1:
        cmd = [sys.executable, "-m", "replications.flexmoe.replica_check", "--out", str(out), *extra]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={world}",
               "--master_addr=127.0.0.1", f"--master_port={free_port()}",
               "-m", "replications.flexmoe.replica_check", "--out", str(out), *extra]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return torch.load(out)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[dict, dict]:
    tmp = tmp_path_factory.mktemp("replica")
    return launch(tmp / "ref.pt", "--reference", world=1), launch(tmp / "w4.pt", "--with-buggy")


@pytest.mark.slow
@pytest.mark.parametrize("placement", list(PLACEMENTS))
@pytest.mark.parametrize("gate", list(GATES))
def test_replicated_layer_equals_the_unreplicated_one(results, gate, placement):
    ref, got = results[0][gate], results[1][f"{gate}/{placement}"]
    for key, value in ref.items():
        if key == "dropped":  # rank 0's own share of drops; the drops themselves are pinned by the gradients
            continue
        torch.testing.assert_close(got[key], value, rtol=1e-5, atol=1e-6,
                                   msg=lambda m, k=key: f"{gate}/{placement} {k}: {m}")
    for pname in ("w1", "b1", "w2", "b2"):
        assert float(got[f"replica_spread.{pname}"]) < 1e-6
    assert float(ref["grad.moe.w1"].abs().sum()) > 0
    if gate == "gshard":
        assert float(ref["dropped"]) > 0  # the capacity rule binds, in the same places for every placement


@pytest.mark.slow
def test_a_replica_takes_part_of_its_experts_tokens(results):
    for gate in GATES:
        static = results[1][f"{gate}/static"]["rows_received"]
        rep = results[1][f"{gate}/replicate0"]["rows_received"]
        assert rep.sum() == static.sum()  # the same rows, computed elsewhere
        assert rep[0] < static[0] and rep[2] > static[2]  # expert 0's rows now split between ranks 0 and 2
        assert rep[1] == static[1] and rep[3] == static[3]


@pytest.mark.slow
def test_missing_replica_all_reduce_is_caught(results):
    ref, buggy = results[0]["switch"], results[1]["switch/replicate0_no_replica_sync"]
    torch.testing.assert_close(buggy["loss"], ref["loss"])  # forward is unchanged...
    assert float(buggy["replica_spread.w1"]) > 1e-4  # ...but the replicas hold different (partial) gradients
    assert not torch.allclose(buggy["grad.moe.w1"], ref["grad.moe.w1"], rtol=1e-3, atol=1e-6)


def test_rows_split_over_replicas_in_rank_order():
    assert split_rows(7, 3) == [3, 2, 2] and split_rows(2, 3) == [1, 1, 0] and split_rows(0, 2) == [0, 0]
    placement = [[0], [1], [2, 0], [3]]
    # one source's rows per expert: 9 for expert 0 (split 5 / 4 between ranks 0 and 2), 1, 2, 3
    assert slot_counts([9, 1, 2, 3], placement) == [[5], [1], [2, 4], [3]]


@pytest.mark.parametrize("placement, match", [
    ([[0], [1], [2]], "3 ranks"), ([[0], [1], [2], []], "no expert"), ([[0, 0], [1], [2], [3]], "twice"),
    ([[0], [1], [2], [2]], r"experts \[3\] are on no rank"), ([[0], [1], [2], [9]], "outside")])
def test_bad_placements_are_refused(placement, match):
    with pytest.raises(ValueError, match=match):
        check_placement(placement, 4, 4)
