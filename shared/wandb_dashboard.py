"""The W&B dashboard (a report) from conf/wandb/dashboard.yaml.

    python -m shared.wandb_dashboard            # offline: validate the spec, print the report it makes
    python -m shared.wandb_dashboard --create   # online: create the report and a workspace (W&B key + wandb-workspaces)

Offline (the default, and all the tests do) nothing contacts W&B: the spec is checked against the tracker's
naming scheme (shared.tracking) and the committed result files (every headline metric is one the paper's
records hold; every paper with records has a section), then printed. ``--create`` builds the report with
``wandb_workspaces.reports.v2`` (``pip install wandb-workspaces``; wandb.apis.reports is its old alias) and a
workspace (a saved view of the project: the same panels, a section per paper) with ``wandb_workspaces.workspaces``,
and saves both to the project. Run-set filters are strings in the syntax the library's parser reads
(``wandb_workspaces.expr.expr_to_filters``, run on save): ``Tags() in ["aggregate"]``; its ``Tags().isin([...])``
is no expression that parser accepts (``ValueError: Unsupported expression type``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from shared.records import is_official
from shared.tracking import SCHEME, SPLITS, metric_name

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "conf" / "wandb" / "dashboard.yaml"
RESULTS = ROOT / "results"
AGGREGATE_TAG = "aggregate"  # the tag shared.tracking gives the run holding a protocol's aggregate


def load_spec(path: Path = SPEC) -> dict[str, Any]:
    return yaml.safe_load(Path(path).read_text())


def committed_records(paper: str, results: Path = RESULTS) -> list[dict[str, Any]]:
    out = []
    for path in sorted((results / paper).glob("*/*.json")):
        if is_official(path):
            continue  # the authors' code run (shared.official): a reference, not a record of the suite
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("complete") and isinstance(record.get("aggregate"), dict):
            out.append(record)
    return out


def committed_metrics(paper: str, results: Path = RESULTS) -> set[str]:
    """Scheme names of the final metrics the paper's committed records hold."""
    return {metric_name(k, final=True) for r in committed_records(paper, results) for k in r["aggregate"]}


def problems(spec: dict[str, Any], results: Path = RESULTS) -> list[str]:
    """What is wrong with the spec, one line each (empty: valid)."""
    out = [f"missing key '{k}'" for k in ("project", "title", "papers") if not spec.get(k)]
    papers = spec.get("papers") or {}
    known = {p.stem for p in (ROOT / "conf" / "paper").glob("*.yaml")}
    with_results = {p.name for p in results.iterdir() if p.is_dir() and committed_records(p.name, results)}
    out += [f"paper '{p}' has committed results but no section" for p in sorted(with_results - set(papers))]
    for paper, section in papers.items():
        if paper not in known:
            out.append(f"paper '{paper}' is not in conf/paper/")
            continue
        metrics = committed_metrics(paper, results)
        if not section.get("headline"):
            out.append(f"{paper}: no headline metric")
        for name in section.get("headline") or []:
            if not SCHEME.match(name) or name.startswith("reported/"):
                out.append(f"{paper}: headline '{name}' is not a train/ val/ test/ name")
            elif metrics and name not in metrics:
                out.append(f"{paper}: headline '{name}' is in none of its result files (they hold "
                           f"{', '.join(sorted(metrics))})")
        for name in section.get("curves") or []:
            if not SCHEME.match(name) or name.split("/")[0] not in SPLITS:
                out.append(f"{paper}: curve '{name}' is not a train/ val/ test/ name")
    return out


def plan(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The report as plain data: one block per section, each with its run sets and panels (what --create builds)."""
    columns = (spec.get("overview") or {}).get("columns") or ["status", "reference_kind", "difference"]
    # A run set's groupby names its section ("config.<key>"): a bare "paper.name" is read as section "paper".
    blocks: list[dict[str, Any]] = []
    aggregates = f'Tags() in ["{AGGREGATE_TAG}"]'  # the protocol's last seed's run (shared.tracking)
    overview = [f"{m}/{c}" for section in spec["papers"].values() for m in section["headline"] for c in columns]
    blocks.append({"heading": (spec.get("overview") or {}).get("title", "Status"),
                   "runsets": [{"name": "aggregates", "filters": aggregates,
                                "groupby": ["config.paper.name"], "columns": overview}],
                   "panels": []})
    for paper, section in spec["papers"].items():
        head = section["headline"]
        panels = [{"type": "BarPlot", "title": f"{m}: mean vs reported", "metrics": [f"{m}/mean", f"reported/{m}"],
                   "groupby": "model.name"} for m in head]
        panels += [{"type": "LinePlot", "title": c, "y": [c], "x": "Step", "groupby": "model.name"}
                   for c in section.get("curves") or []]
        blocks.append({"heading": paper, "runsets": [
            {"name": f"{paper} aggregates", "filters": f'Config("paper.name") == "{paper}" and {aggregates}',
             "groupby": ["config.dataset.name"],
             "columns": [f"{m}/{c}" for m in head for c in ("mean", "std", "n", *columns)] + [f"reported/{m}" for m in head]},
            {"name": f"{paper} seeds", "filters": f'Config("paper.name") == "{paper}"', "groupby": ["config.dataset.name"],
             "columns": head}], "panels": panels})
    return blocks


def _panels(wr: Any, block: dict[str, Any]) -> list[Any]:
    """A plan block's panels as wandb_workspaces objects (the report's and the workspace's are the same classes)."""
    return [wr.BarPlot(title=p["title"], metrics=p["metrics"], groupby=p["groupby"]) if p["type"] == "BarPlot"
            else wr.LinePlot(title=p["title"], x=p["x"], y=p["y"], groupby=p["groupby"]) for p in block["panels"]]


def build_report(spec: dict[str, Any], entity: str):
    """The wandb_workspaces Report of the plan (not saved). Needs `pip install wandb-workspaces`."""
    import wandb_workspaces.reports.v2 as wr

    project = spec["project"]
    blocks: list[Any] = [wr.MarkdownBlock(text=spec.get("description", ""))]
    for block in plan(spec):
        # A runs-table column is "<section>:<name>"; every column here is a metric of the run's summary.
        runsets = [wr.Runset(entity=entity, project=project, name=r["name"], filters=r["filters"], groupby=r["groupby"],
                             visible_columns=[f"summary:{c}" for c in r["columns"]]) for r in block["runsets"]]
        blocks += [wr.H2(text=block["heading"]), wr.PanelGrid(runsets=runsets, panels=_panels(wr, block))]
    return wr.Report(entity=entity, project=project, title=spec["title"], description=spec.get("description", ""),
                     blocks=blocks, width="fluid")


def build_workspace(spec: dict[str, Any], entity: str):
    """The project's workspace (a saved view; not saved here): a section per paper with the report's panels over
    every run, grouped by paper and dataset. Needs `pip install wandb-workspaces`."""
    import wandb_workspaces.reports.v2 as wr
    import wandb_workspaces.workspaces as ws
    from wandb_workspaces import expr

    sections = [ws.Section(name=block["heading"], panels=_panels(wr, block), is_open=True)
                for block in plan(spec) if block["panels"]]
    return ws.Workspace(entity=entity, project=spec["project"], name=spec["title"], sections=sections,
                        runset_settings=ws.RunsetSettings(groupby=[expr.Config("paper.name"), expr.Config("dataset.name")]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.wandb_dashboard", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, default=SPEC)
    parser.add_argument("--create", action="store_true", help="create the report on W&B (online; needs a key)")
    parser.add_argument("--entity", default=None, help="W&B entity (default: the key's own)")
    args = parser.parse_args(argv)
    spec = load_spec(args.spec)
    bad = problems(spec)
    if bad:
        print(f"error: {args.spec}: " + "; ".join(bad), file=sys.stderr)
        return 2
    blocks = plan(spec)
    print(f"{args.spec.relative_to(ROOT) if args.spec.is_relative_to(ROOT) else args.spec}: valid; report "
          f"'{spec['title']}' in project {spec['project']}:")
    for block in blocks:
        kinds = [p["type"] for p in block["panels"]]
        print(f"  {block['heading']}: {len(block['runsets'])} run set(s), "
              f"{kinds.count('BarPlot')} bar plot(s), {kinds.count('LinePlot')} line plot(s)")
    if not args.create:
        print("offline: nothing sent (--create makes it on W&B)")
        return 0
    from shared.config_check import wandb_mode

    if wandb_mode(None)[0] != "online":
        print("error: --create needs W&B online: set WANDB_API_KEY (or `wandb login`)", file=sys.stderr)
        return 2
    try:
        import wandb_workspaces  # noqa: F401
    except ImportError:
        print("error: --create needs wandb-workspaces: pip install wandb-workspaces", file=sys.stderr)
        return 2
    import wandb

    entity = args.entity or wandb.Api().default_entity
    report = build_report(spec, entity)
    report.save()
    print(f"created report {report.url}")
    workspace = build_workspace(spec, entity)
    workspace.save()
    print(f"created workspace {workspace.url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
