"""``python -m replications.flexmoe.a2a_bench``: a replicated heavy expert's all-to-all, MEASURED on the testbed.

The emulated cluster of replications/moe/testbed.py (network namespaces, the inter-node links shaped by tc
to inter_mbit; needs root + ip netns) with conf/paper/flexmoe.yaml protocol.testbed: static placement (one
expert per rank) against expert 0 replicated on the ranks listed under `replicas`, under routing where a share h of every rank's
tokens goes to expert 0 (a2a_worker.py). Communication only (4 ranks on 2 shared cores make compute timings
meaningless); the load average before and after is recorded beside the timings. Writes replica_a2a.json
(command, commit, versions, testbed) into --out (default outputs/results/flexmoe; ``--out results/flexmoe``
refreshes the committed side file the page reads). ``--write-plan DIR`` only writes the worker's DIR/plan.json,
for a2a_worker under torchrun on real nodes (replications/flexmoe/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from omegaconf import OmegaConf

from shared.atomic import write_json_atomic
from shared.paths import CONF_DIR, HAND_RUNS
from shared.runinfo import environment


def placements(W: int, replicas: dict[str, list[int]]) -> dict[str, list[list[int]]]:
    """static (expert r on rank r) and, per entry of `replicas`, expert 0 also on each listed rank."""
    static = [[r] for r in range(W)]
    out = {"static": static}
    for name, ranks in replicas.items():
        out[name] = [list(s) + ([0] if r in ranks and 0 not in s else []) for r, s in enumerate(static)]
    return out


def plan_for(tb: dict) -> dict:
    """a2a_worker's plan.json from protocol.testbed."""
    W = int(tb["nodes"]) * int(tb["ranks_per_node"])
    return {"tokens_per_rank": tb["tokens_per_rank"], "d_model": tb["d_model"], "d_hidden": tb["d_hidden"],
            "hot_shares": list(tb["hot_shares"]), "placements": placements(W, dict(tb["replicas"])),
            "trials": tb["trials"], "warmup": tb.get("warmup", 1)}


def measure(tb: dict, local: bool = False) -> dict:
    """Run the worker on the emulated cluster (or, local=True, on 127.0.0.1 ranks: a functional check only)."""
    from replications.moe.testbed import EmulatedCluster, LocalCluster

    plan = plan_for(tb)
    cluster = (LocalCluster(int(tb["nodes"]), int(tb["ranks_per_node"])) if local else
               EmulatedCluster(int(tb["nodes"]), int(tb["ranks_per_node"]), float(tb["inter_mbit"])))
    with cluster, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.json"
        path.write_text(json.dumps(plan))
        out = cluster.run("replications.flexmoe.a2a_worker", args=["--plan", str(path)], timeout_s=900)[0]
    out["placements"] = plan["placements"]
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HAND_RUNS / "flexmoe"), help="where replica_a2a.json goes")
    parser.add_argument("--write-plan", metavar="DIR", help="only write the worker's DIR/plan.json (for torchrun)")
    args = parser.parse_args(argv)
    from replications.moe.testbed import testbed_unavailable_reason

    tb = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "paper" / "flexmoe.yaml").protocol.testbed,
                                resolve=True)
    if args.write_plan:
        write_json_atomic(Path(args.write_plan) / "plan.json", plan_for(tb))
        print(f"wrote {Path(args.write_plan) / 'plan.json'}")
        return 0
    reason = testbed_unavailable_reason()
    if reason:
        print(f"replica all-to-all not measured: {reason}", file=sys.stderr)
        return 2
    before = os.getloadavg()
    t0 = time.perf_counter()
    out = measure(tb)
    rows = []
    for name, by_share in out["a2a"].items():
        for share, seconds in by_share.items():
            rows.append({"placement": name, "hot_share": float(share), "seconds": seconds,
                         "median_ms": 1e3 * statistics.median(seconds), "mean_ms": 1e3 * statistics.mean(seconds)})
            print(f"{name:>10} hot share {float(share):.2f}: median {rows[-1]['median_ms']:.1f} ms (measured)")
    allreduce = {k: {"seconds": v, "median_ms": 1e3 * statistics.median(v)} for k, v in out["allreduce"].items()}
    write_json_atomic(Path(args.out) / "replica_a2a.json", {
        "what": "MEASURED dispatch + combine all-to-all (and the replica gradient all-reduce) on the emulated "
                "cluster; communication only", "testbed": tb, "placements": out["placements"], "rows": rows,
        "replica_allreduce": allreduce, "load_average_before": list(before), "load_average_after": list(os.getloadavg()),
        "wall_seconds": round(time.perf_counter() - t0, 1), "environment": environment()})
    print(f"wrote {Path(args.out) / 'replica_a2a.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
