"""How a claim's effect moves with model size, on its paper's page: for each claim whose verdict carries a trend
(a spec's ``sizes:``, shared.claims.trend), one table row per size (active parameters, effect with its interval,
the status at that size) and one figure, the effect against active parameters on a log axis with the fitted
line, headed by the trend's reading and the claim's own scale. Drawn from the Claim alone: every paper gets it
from its paper.yaml, with no code of its own."""

from __future__ import annotations

import math
from typing import Any

from shared.claims.display import effect_text, params_text
from shared.report.figures import Panel, Plot, Rule, Series, draw
from shared.report.paper_hook import Block, Claim, Figure, Table

HEADING = "## How the effects move with model size"
NOT_JUDGED = ("not testable here", "not run")  # a size whose precondition failed: drawn hollow


def trend_claims(claims: list[Claim]) -> list[Claim]:
    return [c for c in claims if c.trend]


def figure_name(claim: Claim) -> str:
    return f"trend_{claim.id}.png"


def trend_table(claims: list[Claim]) -> Table:
    rows = []
    for c in claims:
        for r in c.trend["rungs"]:
            interval = effect_text(r["effect"], r["low"], r["high"], r["n"], c.trend.get("unit", ""), r["method"])
            rows.append([c.short, r["dataset"], params_text(r["params"]), interval, r["status"]])
        rows.append([c.short, "trend", "", c.trend["text"], ""])
    return Table(["claim", "size (dataset)", "active params", "effect [95% interval]", "status at that size"], rows,
                 note="The trend is the slope of the effect against log10(active parameters), weighted by each "
                      "size's standard error (shared/claims/trend.py): a statement about these sizes, not the "
                      "paper's verdict at its own scale.")


def trend_plot(claim: Claim) -> Plot:
    t: dict[str, Any] = claim.trend or {}
    rungs = t.get("rungs") or []
    series = []
    for judged in (True, False):
        chosen = [r for r in rungs if (r["status"] not in NOT_JUDGED) == judged]
        if not chosen:
            continue
        has = [r["low"] is not None and r["high"] is not None and not math.isnan(r["low"]) for r in chosen]
        below = [r["effect"] - r["low"] if ok else 0.0 for r, ok in zip(chosen, has)]
        above = [r["high"] - r["effect"] if ok else 0.0 for r, ok in zip(chosen, has)]
        spread = "range over settings" if chosen[0]["method"] == "range" else "95% interval"
        series.append(Series(f"effect ({spread})" if judged else f"size not judged (precondition; {spread})",
                             [r["params"] for r in chosen], [r["effect"] for r in chosen], style="o", color="C0",
                             yerr=(below, above), hollow=not judged))
    if t.get("slope") is not None and t.get("intercept") is not None and len(rungs) >= 2:
        xs = [rungs[0]["params"], rungs[-1]["params"]]
        series.append(Series(f"fit: {t['slope']:+.3g} per 10x", xs,
                             [t["intercept"] + t["slope"] * math.log10(x) for x in xs], style="--", color="C1"))
    claim_params, line = t.get("claim_params"), float(t.get("line") or 0.0)
    title = f"{claim.short}\n{t.get('reading', '')}" + (f" (claim at {params_text(claim_params)})" if claim_params else "")
    return Plot([Panel(title=title, xlabel="active parameters per token", ylabel=t.get("unit") or "effect",
                       series=series, hlines=[Rule(line, "claim's threshold" if line else "no effect", style=":")],
                       log_x=True, grid=True,
                       title_size=9)], panel_size=(5.6, 3.8))


def trend_blocks(claims: list[Claim]) -> list[Block]:
    """The page's section: the table of every trend claim, then one figure per claim (none: no section)."""
    chosen = trend_claims(claims)
    if not chosen:
        return []
    figures: list[Block] = [Figure(figure_name(c), draw=lambda c=c: draw(trend_plot(c)), caption=f"trend {c.id}",
                                   dpi=110) for c in chosen]
    return [HEADING, trend_table(chosen), *figures]
