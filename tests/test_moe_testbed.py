"""The emulated multi-node cluster (replications/moe/testbed.py): ranks land on their nodes, the inter-node
link is shaped to its rate, and no namespace is left behind, also when a worker crashes or the creating
process dies. Needs root + iproute2 (CI has both); skips with the reason elsewhere. LocalCluster runs anywhere.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from replications.moe import testbed
from replications.moe.testbed import EmulatedCluster, LocalCluster, our_namespaces, testbed_unavailable_reason

pytestmark = pytest.mark.slow
REASON = testbed_unavailable_reason()
needs_testbed = pytest.mark.skipif(REASON is not None, reason=REASON or "")
WORKER = "replications.moe.testbed_check"


@needs_testbed
def test_ranks_nodes_and_shaped_link_then_nothing_left():
    mib, rate = 2.0, 100  # 2 MiB each way at 100 Mbit/s: >= 0.34 s round trip; unshaped loopback is ~100x faster
    with EmulatedCluster(nodes=2, ranks_per_node=2, inter_rate_mbit=rate) as cluster:
        assert len(our_namespaces(testbed.os.getpid())) == 3  # two nodes and the bridge
        outs = cluster.run(WORKER, ["--mib", mib], timeout_s=90)
    assert [(o["rank"], o["node"], o["world"]) for o in outs] == [(0, 0, 4), (1, 0, 4), (2, 1, 4), (3, 1, 4)]
    assert all(o["sum"] == 6.0 for o in outs)  # the all-reduce really spans both namespaces
    bound = 2 * mib * 2**20 * 8 / (rate * 1e6)
    assert outs[0]["roundtrip_s"] >= 0.9 * bound, (outs[0]["roundtrip_s"], bound)
    assert our_namespaces(testbed.os.getpid()) == []


@needs_testbed
def test_crashing_worker_raises_and_leaves_no_namespace():
    with pytest.raises(RuntimeError, match="rank 1 .* exited 3"):
        with EmulatedCluster(nodes=2, ranks_per_node=1) as cluster:
            cluster.run(WORKER, ["--mode", "crash", "--crash-rank", "1"], timeout_s=60)
    assert our_namespaces(testbed.os.getpid()) == []


@needs_testbed
def test_namespaces_of_a_dead_process_are_removed():
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    name = f"{testbed.PREFIX}{int(dead.stdout)}_0_n0"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        assert name in our_namespaces()
        assert name in testbed.remove_stale()
        assert name not in our_namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_local_cluster_runs_the_same_worker():
    outs = LocalCluster(nodes=2, ranks_per_node=1).run(WORKER, timeout_s=90)
    assert [(o["rank"], o["node"], o["sum"]) for o in outs] == [(0, 0, 1.0), (1, 1, 1.0)]


def test_local_cluster_reports_a_crash():
    with pytest.raises(RuntimeError, match="rank 0 .* exited 3"):
        LocalCluster(nodes=1, ranks_per_node=2).run(WORKER, ["--mode", "crash", "--crash-rank", "0"], timeout_s=60)


def test_bad_topology_is_refused():
    with pytest.raises(ValueError, match="ranks_per_node"):
        EmulatedCluster(nodes=2, ranks_per_node=0)
    with pytest.raises(ValueError, match="inter_rate_mbit"):
        EmulatedCluster(nodes=2, ranks_per_node=1, inter_rate_mbit=-5)
