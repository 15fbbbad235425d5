"""A seed list typed on a command line (``--seeds 1,2,3``): the one parser of shared.merge and replications.verify."""

from __future__ import annotations

from shared.config_check import MAX_SEED, is_seed


def parse_seeds(text: str, option: str = "--seeds") -> list[int]:
    """Comma-separated seeds, or ValueError in one line saying what is wrong and how to write it."""
    example = f"e.g. {option} 1,2,3"
    try:
        seeds = [int(s) for s in text.split(",")]
    except ValueError:
        raise ValueError(f"{option} {text!r} is invalid: give comma-separated integers, {example}") from None
    if not all(is_seed(s) for s in seeds):
        raise ValueError(f"{option} {text!r} is invalid: seeds are integers in [0, {MAX_SEED}], {example}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{option} {text!r} repeats a seed: give each seed once, {example}")
    return seeds
