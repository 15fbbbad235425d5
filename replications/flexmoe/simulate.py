"""``python -m replications.flexmoe.simulate [--records DIR] [--out DIR]``: the placement policies replayed on the
recorded traces.

Every figure here is MODELLED (stepmodel.py: the testbed's fitted α–β model plus the constants in
conf/paper/flexmoe.yaml protocol.simulator), never measured. For each trace (gate x E x seed; traces in
results/flexmoe/traces/), W = E ranks in nodes of G, each trace source group is one rank (16 sources -> W
ranks), its counts scaled to `tokens_per_rank` tokens per rank per step (the trace's shares, a larger batch);
each policy's per-step time is summed over the two MoE layers. Reads the records and traces under --records
(the paper's results folder, default results/flexmoe) and writes simulation.json into --out (default
outputs/results/flexmoe; ``--out results/flexmoe`` refreshes the committed side file the page reads).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from replications.flexmoe import policies
from replications.flexmoe.stepmodel import load_cost_model, make_cluster
from replications.moe.costmodel import CostModel
from shared.atomic import write_json_atomic
from shared.paths import CONF_DIR, HAND_RUNS, REPO_ROOT, RESULTS
from shared.runinfo import environment

POLICIES = ("static", "fastermoe", "flexmoe", "flexmoe_oracle", "ideal")


def rank_counts(routed: np.ndarray, W: int, tokens_per_source: float, tokens_per_rank: int) -> np.ndarray:
    """routed [steps, layers, S, E] -> [steps, layers, W, E]: S / W consecutive sources per rank, scaled so
    each rank routes `tokens_per_rank` tokens (times top-k) per step."""
    steps, layers, S, E = routed.shape
    if S % W:
        raise ValueError(f"{S} trace sources do not group into {W} ranks")
    grouped = routed.reshape(steps, layers, W, S // W, E).sum(3).astype(float)
    return grouped * tokens_per_rank / (tokens_per_source * S / W)


def assumed_cost(name: str, values: dict[str, float]) -> CostModel:
    """An α–β model from assumed figures (labelled assumed wherever it is reported), one inter-node link `name`."""
    return CostModel(float(values["alpha_intra"]), float(values["beta_intra"]), float(values["alpha_inter"]),
                     {name: float(values["beta_inter"])}, {name: 0.0})


def simulate_trace(T: np.ndarray, cluster, flex: policies.FlexConfig) -> dict[str, Any]:
    """T [steps, layers, W, E] -> per policy: mean modelled ms per step (layers summed) and extras."""
    out: dict[str, Any] = {}
    for name in POLICIES:
        per_layer = []
        for layer in range(T.shape[1]):
            t = T[:, layer]
            if name == "static":
                r = policies.run_static(t, cluster)
            elif name == "fastermoe":
                r = policies.run_fastermoe(t, cluster)
            elif name == "flexmoe":
                r = policies.run_flexmoe(t, cluster, flex)
            elif name == "flexmoe_oracle":
                r = policies.run_flexmoe(t, cluster, flex, oracle=True)
            else:
                r = policies.run_ideal(t, cluster)
            per_layer.append(r)
        seconds = np.sum([r["seconds"] for r in per_layer], axis=0)
        entry = {"mean_ms": 1e3 * float(seconds.mean()), "median_ms": 1e3 * float(np.median(seconds))}
        if name == "fastermoe":
            entry["mean_shadowed"] = float(np.mean([r["mean_shadowed"] for r in per_layer]))
        if name.startswith("flexmoe"):
            entry["ops"] = {k: int(sum(r["ops"][k] for r in per_layer)) for k in per_layer[0]["ops"]}
            entry["mean_replicas"] = float(np.mean([r["mean_replicas"] for r in per_layer]))
        out[name] = entry
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", default=str(RESULTS / "flexmoe"),
                        help="the paper's results folder: wikitext2/<model>.json and traces/*.npz")
    parser.add_argument("--out", default=str(HAND_RUNS / "flexmoe"), help="where simulation.json goes")
    args = parser.parse_args(argv)
    folder, out = Path(args.records), Path(args.out)
    conf = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "paper" / "flexmoe.yaml"), resolve=True)
    sim = conf["protocol"]["simulator"]
    flex = policies.FlexConfig(**sim["flexmoe"])
    fitted = load_cost_model(REPO_ROOT / sim["comm_fit"])
    costs = {str(link): assumed_cost(str(link), sim["assumed"][link]) if link in sim.get("assumed", {}) else fitted
             for link in sim["links"]}
    records = sorted((folder / "wikitext2").glob("*.json"))
    records = [json.loads(p.read_text()) for p in records if not p.name.endswith(".partial.json")]
    if not records:
        print(f"no flexmoe results under {folder / 'wikitext2'}", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    rows = []
    for record in records:
        p, m = record["config"]["paper"]["protocol"], record["config"]["model"]
        E = int(m["num_experts"])
        k = int(sim["top_k"][m["gate"]])
        for run in record["runs"]:
            trace = folder / "traces" / run["train"]["trace"]
            if not trace.exists():
                print(f"missing trace {trace}", file=sys.stderr)
                return 1
            routed = np.load(trace)["routed"]
            tokens_per_source = p["batch_size"] * p["seq_len"] / routed.shape[2]
            T = rank_counts(routed, E, tokens_per_source, int(sim["tokens_per_rank"]))
            for link in sim["links"]:
                cluster = make_cluster(E, int(sim["ranks_per_node"]), costs[str(link)], str(link), int(sim["d_model"]),
                                       int(sim["d_hidden"]), int(sim["bytes_per_value"]), float(sim["flops_per_s"]))
                res = simulate_trace(T, cluster, flex)
                rows.append({"model": record["model"], "gate": m["gate"], "E": E, "top_k": k, "seed": run["seed"],
                             "link_mbit": str(link), "policies": res})
                print(f"{record['model']} seed {run['seed']} link {link}: " +
                      ", ".join(f"{n} {v['mean_ms']:.1f} ms" for n, v in res.items()) + " (modelled)", flush=True)
    write_json_atomic(out / "simulation.json", {
        "what": "MODELLED step time (ms, two MoE layers) per placement policy on the recorded routing traces; "
                "not measured", "constants": sim,
        "cost_models": {link: c.to_dict() for link, c in costs.items()}, "rows": rows,
        "wall_seconds": round(time.perf_counter() - t0, 1), "environment": environment()})
    print(f"wrote {out / 'simulation.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
