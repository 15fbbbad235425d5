"""``python -m replications.ta_moe.replay``: the recorded dispatch of each arm replayed on the emulated cluster.

A replay, not training: the per-step source -> destination token counts recorded while training
(results/ta_moe/wikitext2/<arm>.json, every seed, the last `--steps` steps of both MoE layers) are sent as
all-to-alls (dispatch + combine) between 4 gloo ranks on 2 emulated nodes (replications/moe/testbed.py:
network namespaces, inter-node links shaped to the cluster's inter_mbit) with `--d-model` fp32 values per
token: the model's own width, and by default GPT-Medium's 1024 (the paper's supplement) where bandwidth,
not per-message latency, dominates. First it measures the testbed's link rates (16 MiB ping-pong within a
node and across nodes): the bandwidths the topology matrix should be derived from (measured_mbit).
Reads the records under ``--records`` (default results/ta_moe, the committed ones) and writes replay.json
(command, commit, versions, testbed) into ``--out`` (default outputs/results/ta_moe; pass ``--out
results/ta_moe`` to refresh the committed side files the page reads). ``--write-plan DIR`` only writes the
worker's plans (DIR/plan<d_model>.json), for replay_worker under torchrun on real nodes (replications/ta_moe/README.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from omegaconf import OmegaConf

from shared.atomic import write_json_atomic
from shared.paths import CONF_DIR, HAND_RUNS, RESULTS
from shared.runinfo import environment

ARMS = ("ta_moe", "gshard", "fastermoe")


def plan_for(results: Path, steps: int) -> dict[str, list[list[list[int]]]]:
    arms = {}
    for arm in ARMS:
        path = results / "wikitext2" / f"{arm}.json"
        if not path.exists():
            continue
        record = json.loads(path.read_text())
        arms[arm] = [m for run in record["runs"] for step in run["train"]["dispatch"][-steps:] for m in step]
    return arms


def write_plans(folder: Path, arms: dict[str, list[list[list[int]]]], args: argparse.Namespace) -> int:
    """replay_worker's plan per width, as the testbed run builds them."""
    if not arms:
        print(f"no recorded dispatch under {args.records}/wikitext2", file=sys.stderr)
        return 2
    for d_model in args.d_model or [128, 1024]:
        write_json_atomic(folder / f"plan{d_model}.json", {"d_model": d_model, "warmup": args.warmup, "arms": arms})
        print(f"wrote {folder / f'plan{d_model}.json'}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50, help="the last this many training steps of every seed")
    parser.add_argument("--d-model", type=int, action="append", help="values per token (repeatable); default 128 and 1024")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--records", default=str(RESULTS / "ta_moe"),
                        help="the paper's results folder whose wikitext2/<arm>.json dispatch is replayed")
    parser.add_argument("--out", default=str(HAND_RUNS / "ta_moe"), help="where replay.json / links.json go")
    parser.add_argument("--measure-only", action="store_true",
                        help="only measure the link rates into <out>/links.json (the topology matrix's bandwidths)")
    parser.add_argument("--write-plan", metavar="DIR", help="only write the worker's DIR/plan<d_model>.json (for torchrun)")
    args = parser.parse_args(argv)
    if args.write_plan:
        return write_plans(Path(args.write_plan), plan_for(Path(args.records), args.steps), args)
    from replications.moe.testbed import EmulatedCluster, testbed_unavailable_reason

    reason = testbed_unavailable_reason()
    if reason:
        print(f"replay not run: {reason}", file=sys.stderr)
        return 2
    out = Path(args.out)
    cluster_cfg = OmegaConf.load(CONF_DIR / "paper" / "ta_moe.yaml").protocol.cluster
    testbed = {"nodes": int(cluster_cfg.nodes), "ranks_per_node": int(cluster_cfg.ranks_per_node),
               "inter_rate_mbit": float(cluster_cfg.inter_mbit), "intra": "loopback, unshaped"}
    if args.measure_only:
        with EmulatedCluster(nodes=testbed["nodes"], ranks_per_node=testbed["ranks_per_node"],
                             inter_rate_mbit=testbed["inter_rate_mbit"]) as cluster:
            measured = cluster.run("replications.ta_moe.replay_worker", args=["--measure-mib", "16"], timeout_s=300)[0]
        write_json_atomic(out / "links.json", {
            "what": "link rates of the emulated cluster: 16 MiB ping-pong, best of 3, rank 0 <-> rank 1 (same node) "
                    "and rank 0 <-> first rank of node 1", "measured_mbit": measured, "testbed": testbed,
            "environment": environment()})
        print(f"measured link rates: intra {measured['intra']:.0f} Mbit/s, inter {measured['inter']:.0f} Mbit/s; "
              f"wrote {out / 'links.json'}")
        return 0
    arms = plan_for(Path(args.records), args.steps)
    if not arms:
        print(f"no recorded dispatch under {args.records}/wikitext2: run `python -m replications.replicate ta_moe` first",
              file=sys.stderr)
        return 2
    env = environment()
    rows = []
    t0 = time.perf_counter()
    with EmulatedCluster(nodes=testbed["nodes"], ranks_per_node=testbed["ranks_per_node"],
                         inter_rate_mbit=testbed["inter_rate_mbit"]) as cluster, \
            tempfile.TemporaryDirectory() as tmp:
        measured = cluster.run("replications.ta_moe.replay_worker", args=["--measure-mib", "16"], timeout_s=300)[0]
        print(f"measured link rates: intra {measured['intra']:.0f} Mbit/s, inter {measured['inter']:.0f} Mbit/s")
        for d_model in args.d_model or [128, 1024]:
            plan = Path(tmp) / f"plan{d_model}.json"
            plan.write_text(json.dumps({"d_model": d_model, "warmup": args.warmup, "arms": arms}))
            times = cluster.run("replications.ta_moe.replay_worker", args=["--plan", str(plan)], timeout_s=1800)[0]
            for arm, seconds in times.items():
                rows.append({"arm": arm, "d_model": d_model, "matrices": len(seconds),
                             "mean_ms": 1e3 * statistics.mean(seconds), "median_ms": 1e3 * statistics.median(seconds),
                             "seconds": seconds})
                print(f"d_model {d_model:>5} {arm:>10}: mean {rows[-1]['mean_ms']:.2f} ms, "
                      f"median {rows[-1]['median_ms']:.2f} ms over {len(seconds)} recorded dispatches", flush=True)
    write_json_atomic(out / "replay.json", {
        "what": "replay of recorded dispatch matrices (dispatch + combine all-to-all), not training",
        "testbed": testbed,
        "measured_mbit": measured,  # 16 MiB ping-pong, rank 0 <-> rank 1 (same node) / first rank of node 1
        "steps_per_seed": args.steps, "rows": rows, "wall_seconds": round(time.perf_counter() - t0, 1),
        "environment": env})
    print(f"wrote {out / 'replay.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
