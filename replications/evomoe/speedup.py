"""EvoMoE v1's abstract metric as data: steps to Switch's final validation perplexity (``rows``, ``seed_rows``).

"The DTS gate reaches Switch's validation perplexity 2.0x faster": for every model, the first curve point
(optimiser step) whose validation perplexity (curve subset, mean over seeds) is at or below Switch's final
one, and Switch's steps divided by it. Equal steps cost different FLOPs (EvoMoE's dense phase runs every
expert); the active-expert column says how many ran per token.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def curve(run: dict[str, Any], key: str = "valid_ppl_subset") -> tuple[list[int], np.ndarray]:
    points = run["train"]["curve"]
    return [p["step"] for p in points], np.array([p[key] for p in points], dtype=float)


def mean_curve(record: dict[str, Any], key: str = "valid_ppl_subset") -> tuple[list[int], np.ndarray]:
    curves = [curve(run, key) for run in record["runs"]]
    return curves[0][0], np.mean([values for _, values in curves], axis=0)


def first_reaching(steps: list[int], ppl: np.ndarray, target: float) -> int | None:
    hit = np.nonzero(ppl <= target)[0]
    return int(steps[hit[0]]) if hit.size else None


def rows(records: dict[str, dict[str, Any]], reference: str = "switch") -> tuple[float, list[dict[str, Any]]] | None:
    """(the target: ``reference``'s final mean-curve PPL, one row per model with its steps to it and the speed-up
    ``reference``'s steps / its steps, None where never reached); None without a ``reference`` record."""
    if reference not in records:
        return None
    ref_steps, ref_ppl = mean_curve(records[reference])
    target = float(ref_ppl[-1])
    ref_at = first_reaching(ref_steps, ref_ppl, target)
    out = []
    for name, record in records.items():
        steps, ppl = mean_curve(record)
        at = first_reaching(steps, ppl, target)
        out.append({"model": name, "final_valid_ppl_subset": float(ppl[-1]), "steps_to_target": at,
                    "speedup": ref_at / at if at else None,
                    "mean_active_experts": record["aggregate"]["mean_active_experts"]["mean"]})
    return target, out


def seed_rows(model: dict[str, Any], reference: dict[str, Any]) -> list[dict[str, Any]]:
    """Paired by seed: the reference's final curve PPL (the target), the reference's steps to it (its first curve
    point at or below it), the model's steps to it (None: not reached within the run) and the model's last step."""
    refs = {run["seed"]: curve(run) for run in reference["runs"]}
    out = []
    for run in model["runs"]:
        if run["seed"] not in refs:
            continue
        ref_steps, ref_ppl = refs[run["seed"]]
        target = float(ref_ppl[-1])
        steps, ppl = curve(run)
        out.append({"seed": run["seed"], "target_valid_ppl_subset": target,
                    "reference_steps": first_reaching(ref_steps, ref_ppl, target),
                    "model_steps": first_reaching(steps, ppl, target), "model_last_step": steps[-1]})
    return out

