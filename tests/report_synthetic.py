"""A tiny results tree for the report tests: one paper, two datasets, its model and a baseline, plus the files
the page must leave out (a corrupt one, an unfinished one, a smoke-scale one)."""

from __future__ import annotations

import json
from pathlib import Path

from shared.stats import summarize

PAPER_YAML = """\
title: "Toy: a paper for tests"
headline: {metric: test_acc, model: toy}
venue: "TestConf 2024"
# A long unbreakable URL: a phone-width page must wrap it, not scroll sideways.
code: {url: "https://example.org/toy/tree/main/apps/arather_long_path_without_any_spaces_or_hyphens/examples/TOY",
       commit: abcdef1234567}
reported:
  - {kind: paper, dataset: d1, model: toy, metric: test_acc, value: 80.0, verified: true, source: "Table 2"}
  - {kind: secondary, dataset: d2, model: toy, metric: test_acc, value: 50.0, verified: false, source: "Table 9",
     copied_by: "Other et al. 2025"}
tolerances: {test_acc: 1.0}
"""


def _record(dataset: str, model: str, acc: list[float], cpus: list[str | None], scale: str = "full",
            complete: bool = True) -> dict:
    per_seed = [{"val_acc": a - 1, "test_acc": a, "test_rank": 1000.0 + 10 * a} for a in acc]
    aggregate = {k: summarize([s[k] for s in per_seed]) for k in per_seed[0]}
    # The stored comparison predates the references: the page must recompute it from paper.yaml.
    comparison = [{"metric": k, "reproduced_mean": v["mean"], "reproduced_std": v["std"], "n": v["n"],
                   "reported": None, "source": None, "verified": None, "difference": None,
                   "status": "no reference"} for k, v in aggregate.items()]
    runs = [{"seed": i, "metrics": s, **({"cpu": c} if c else {})} for i, (s, c) in enumerate(zip(per_seed, cpus))]
    return {"paper": "toy", "dataset": dataset, "model": model, "scale": scale, "complete": complete,
            "comparison": comparison, "aggregate": aggregate, "runs": runs, "wall_seconds": 120.0,
            "environment": {"hardware": {"cpu": "CPU-FILE", "torch_threads": 1, "gpu": None}},
            "config": {"seed": None, "scale": {"seeds": [0, 1, 2]}}}


def write_synthetic(base: Path) -> Path:
    """Write base/results and base/replications/toy/paper.yaml; return the results root."""
    root = base / "results"
    (base / "replications" / "toy").mkdir(parents=True)
    (base / "replications" / "toy" / "paper.yaml").write_text(PAPER_YAML)
    files = {
        "d1/toy.json": _record("d1", "toy", [80.1, 80.3], ["CPU-A", "CPU-B"]),
        "d2/toy.json": _record("d2", "toy", [60.0, 62.0], ["CPU-A", "CPU-A"]),
        "d1/base.json": _record("d1", "base", [70.0, 71.0], [None, None]),  # older file: CPU per file only
        "d2/base.json": _record("d2", "base", [55.0, 56.0], ["CPU-A", "CPU-A"]),
        "d1/smokey.json": _record("d1", "smokey", [1.0, 2.0], ["CPU-A", "CPU-A"], scale="smoke"),
        "d2/halfway.partial.json": _record("d2", "halfway", [3.0], ["CPU-A"], complete=False),
    }
    for name, record in files.items():
        (root / "toy" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "toy" / name).write_text(json.dumps(record))
    (root / "toy" / "d1" / "broken.json").write_text('{"paper": "toy", "complete": tr')  # truncated write
    (root / "toy" / "README.md").write_text("# toy's own summary, written by its hook\n")
    return root


CLAIMS_YAML = """\
claims:
  - id: beats_base
    text: "Toy beats the base model in test accuracy on every dataset it was evaluated on, by a wide margin (Table 2)"
    short: "toy beats base in test accuracy"
    source: "Table 2"
    source_kind: paper
    verified: true
    claim_scale: {params: 1.5e9, text: "Toy-XL 1.5B"}
    per_dataset: [d1, d2]
    judge: {kind: paired_difference, metric: test_acc, arms: [toy, base], claimed: positive, margin: 1.0,
            unit: "accuracy points", scale: "tests.report_synthetic:toy_scale"}
  - id: gpus
    text: "Toy trains on 64 GPUs at 90% scaling efficiency, a sentence long enough that any first screen would cut it"
    short: "toy scales to 64 GPUs"
    source: "Section 5"
    source_kind: paper
    verified: false
    claim_scale: {params: 1.5e9, hardware: "64 A100"}
    not_testable: "needs 64 GPUs"
"""


def toy_scale(results, dataset, spec) -> dict:
    """d1 at 0.81M parameters (far below the claim's 1.5B), d2 at 1B (close to it)."""
    return {"params": 8.1e5 if dataset == "d1" else 1e9, "dataset": dataset}


def with_claims(base: Path) -> None:
    """Add claim specs to the synthetic paper.yaml (written by write_synthetic)."""
    path = base / "replications" / "toy" / "paper.yaml"
    path.write_text(path.read_text() + CLAIMS_YAML)


def claims_hook(results):
    """The toy paper's report(): a page and its claims judged by shared.claims from the synthetic paper.yaml."""
    from shared.claims.judge import paper_claims
    from shared.report.paper_hook import PaperReport

    claims = paper_claims(results.root.parent / "replications" / "toy" / "paper.yaml", results)
    return PaperReport(blocks=["# toy", "its own page"], claims=claims)
