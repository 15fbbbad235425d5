"""W&B runs as the dashboard sees them, offline only (WANDB_MODE=offline in a private WANDB_DIR; nothing
contacts a server): a tiny run per paper on its committed metric names (results/<paper>/*/*.json: the
aggregate's keys, runs[0]'s metrics and train curve), and the real runner on a toy replication, each decoded
from the run's .wandb file (a leveldb-style log of wandb.proto Records) and checked against the scheme of
shared.tracking: train/ val/ test/ reported/ names, per-metric mean/std/n, status, reference kind, tags, the
result artifact, GAGA in percent."""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from omegaconf import OmegaConf

from shared import tracking
from shared.records import complete_records

ROOT = Path(__file__).resolve().parents[1]
GIT = {"git_commit": "abcdef0123456789", "git_dirty": False}
NOT_A_SCALAR = (bool, type(None))


def committed_record(paper: str) -> dict[str, Any] | None:
    """The paper's first complete committed record with a comparison (sorted paths: the same one every time);
    never an official-code record (shared.records reads result records one way for every reader)."""
    for _, record in complete_records(ROOT / "results" / paper, "*/*.json"):
        if record.get("complete") is True and record.get("aggregate") and record.get("runs"):
            return record
    return None


PAPERS = sorted(p.name for p in (ROOT / "results").iterdir() if p.is_dir() and committed_record(p.name))


# --- decoding an offline run -------------------------------------------------------------------------------

def records(path: Path):
    """wandb.proto Records of a .wandb file: a 7-byte header (':W&B', 0xBEE1, version), then 32 KiB blocks of
    chunks, each with a 7-byte header (crc32, length, type: 1 full, 2 first, 3 middle, 4 last)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data, block = path.read_bytes(), 32768
    ident, magic, _ = struct.unpack("<4sHB", data[:7])
    assert ident == b":W&B" and magic == 0xBEE1
    pos, buf = 7, b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 0 and length == 0:
            continue
        buf = chunk if kind in (1, 2) else buf + chunk
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(buf)
            yield record


def key_of(item) -> str:
    return ".".join(item.nested_key) if item.nested_key else item.key


def decode(run_dir: Path, wait: float = 30.0) -> dict[str, Any]:
    """name, tags, group, history rows, final summary and artifacts of one offline run folder. wandb-core may
    still be writing the file when run.finish() returns (seen: a file of its 7-byte header only): wait for the
    run's exit record."""
    deadline = time.monotonic() + wait
    while True:
        out = _decode(run_dir)
        if "exit" in out["kinds"] or time.monotonic() > deadline:
            return out
        time.sleep(0.1)


def _decode(run_dir: Path) -> dict[str, Any]:
    (log,) = run_dir.glob("run-*.wandb")
    out: dict[str, Any] = {"history": [], "summary": {}, "artifacts": [], "tags": [], "kinds": []}
    for record in records(log):
        kind = record.WhichOneof("record_type")
        out["kinds"].append(kind)
        if kind == "run":
            out.update(name=record.run.display_name, group=record.run.run_group, tags=list(record.run.tags),
                       job_type=record.run.job_type)
        elif kind == "history":
            out["history"].append({key_of(i): json.loads(i.value_json) for i in record.history.item})
        elif kind == "summary":
            out["summary"].update({key_of(i): json.loads(i.value_json) for i in record.summary.update})
        elif kind == "artifact":
            out["artifacts"].append({"type": record.artifact.type, "name": record.artifact.name,
                                     "files": [c.path for c in record.artifact.manifest.contents]})
    return out


def user_keys(row: dict[str, Any]) -> set[str]:
    return {k for k in row if not k.startswith("_")}


@pytest.fixture(scope="module")
def offline(tmp_path_factory) -> Path:
    """W&B offline, every folder it writes inside one private folder, no key, no login, no server. Module-wide:
    wandb reads its environment once per process (wandb.setup), so it is torn down before and after."""
    import wandb

    wandb.teardown()  # a setup by an earlier test module holds that module's environment
    base = tmp_path_factory.mktemp("wandb")
    mp = pytest.MonkeyPatch()
    for name in ("WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_ENTITY", "WANDB_PROJECT", "WANDB_SWEEP_ID", "WANDB_RUN_ID"):
        mp.delenv(name, raising=False)
    mp.setenv("WANDB_MODE", "offline")
    mp.setenv("WANDB_SILENT", "true")
    mp.setenv("WANDB_CONSOLE", "off")
    mp.setenv("NETRC", str(base / "netrc"))
    for name, sub in (("WANDB_DIR", "wandb_dir"), ("WANDB_CACHE_DIR", "cache"), ("WANDB_DATA_DIR", "data"),
                      ("WANDB_CONFIG_DIR", "config"), ("WANDB_ARTIFACT_DIR", "artifacts")):
        (base / sub).mkdir()
        mp.setenv(name, str(base / sub))
    yield base / "wandb_dir" / "wandb"
    wandb.teardown()  # the module's wandb-core service ends with it
    mp.undo()


def run_folder(root: Path, run_id: str) -> Path:
    (folder,) = root.glob(f"offline-run-*-{run_id}")
    return folder


def tracker_cfg(record: dict[str, Any]):
    cfg = OmegaConf.create(record["config"])
    cfg.tracker = {"name": "wandb", "project": "replications-test", "entity": None, "mode": "offline"}
    for key in ("paper", "dataset", "model", "scale"):
        OmegaConf.update(cfg, f"{key}.name", record[key], force_add=True)
    return cfg


def per_step_points(paper: str, record: dict[str, Any]) -> list[dict[str, float]]:
    """What the paper's train() hands `log`: its stored curve's numbers (without the step/epoch counters it
    passes as `step`), or, where no curve is stored, the names its train.py logs."""
    curve = (record["runs"][0].get("train") or {}).get("curve")
    if isinstance(curve, list) and curve and isinstance(curve[0], dict):
        points = [{k: v for k, v in p.items() if k not in ("step", "epoch")
                   and isinstance(v, (int, float)) and not isinstance(v, NOT_A_SCALAR)} for p in curve[:3]]
        if any(points):
            return points
    if paper == "pshgcn":
        return [{"train/loss": 1.0, "val/loss": 1.1}, {"train/loss": 0.8, "val/loss": 0.9}]
    return [{"train_loss": 1.0}, {"train_loss": 0.8}]  # rep; the rest train nothing (released models, benchmarks)


def gaga_points(tracker: tracking.Tracker) -> None:
    """GAGA's real training loop on a planted signal, logging through the tracker: its units as it logs them."""
    import torch

    from replications.gaga.train import fit

    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = (x[:, 0] > 0).long()
    model = torch.nn.Linear(4, 2)
    fit(lambda idx: model(x[idx]), model, y, torch.arange(0, 40), torch.arange(40, 64),
        torch.optim.Adam(model.parameters(), lr=0.05), max_steps=3, patience_steps=3, batch_size=None,
        log=tracker.log)


def check_scheme(run: dict[str, Any]) -> None:
    for row in run["history"]:
        for key in user_keys(row):
            assert tracking.SCHEME.match(key) and key.split("/")[0] in tracking.SPLITS, key
    for key in user_keys(run["summary"]):
        assert tracking.SCHEME.match(key), key
        assert not key.startswith(("test/val", "test/valid", "test/test", "train/train", "val/val")), key


@pytest.mark.parametrize("paper", PAPERS)
def test_a_paper_run_decodes_with_the_scheme(paper, offline, tmp_path):
    record = committed_record(paper)
    cfg = tracker_cfg(record)
    tracker = tracking.make_tracker(cfg, GIT)
    assert isinstance(tracker, tracking.WandbTracker) and tracker.mode == "offline"
    tracker.start(cfg, seed=record["runs"][0]["seed"])
    run_id = tracker.run.id
    if paper == "gaga":
        gaga_points(tracker)
    else:
        for step, point in enumerate(per_step_points(paper, record)):
            tracker.log(point, step)
    reported = {row["metric"]: row["reported"] for row in record["comparison"] if row.get("reported") is not None}
    metrics = record["runs"][0]["metrics"]
    tracker.finish(metrics, reported)
    path = tmp_path / f"{record['model']}.json"
    path.write_text(json.dumps(record))
    tracker.finish_protocol(record, path)

    run = decode(run_folder(offline, run_id))
    check_scheme(run)
    assert "exit" in run["kinds"] and run["history"] and all(user_keys(row) for row in run["history"])
    summary = run["summary"]
    for raw, value in metrics.items():  # the seed's own numbers, unchanged, under their scheme names
        assert summary[tracking.metric_name(raw, final=True)] == pytest.approx(value), raw
    for raw, agg in record["aggregate"].items():  # the cross-seed aggregate
        name = tracking.metric_name(raw, final=True)
        assert summary[f"{name}/mean"] == pytest.approx(agg["mean"]) and summary[f"{name}/n"] == agg["n"], raw
        assert f"{name}/std" in summary
    for row in record["comparison"]:
        name = tracking.metric_name(row["metric"], final=True)
        assert summary[f"{name}/status"] == row["status"]
        if row.get("reference_kind") is not None:
            assert summary[f"{name}/reference_kind"] == row["reference_kind"]
        if row.get("reported") is not None:
            assert summary[f"reported/{name}"] == pytest.approx(row["reported"])
    assert {f"paper:{paper}", f"dataset:{record['dataset']}", f"model:{record['model']}", f"scale:{record['scale']}",
            "commit:abcdef0", "seed", "aggregate"} <= set(run["tags"])
    assert run["group"] == f"{paper}/{record['dataset']}"
    assert [(a["type"], a["files"]) for a in run["artifacts"]] == [("result", [path.name])]
    if paper == "gaga":  # percent everywhere: per epoch as in the summary and the paper
        val = [row["val/auc"] for row in run["history"] if "val/auc" in row]
        assert val and all(1.0 < v <= 100.0 for v in val)
        assert all(1.0 < summary[k] <= 100.0 for k in ("val/auc", "test/auc", "test/ap", "test/f1_macro"))


def test_every_paper_with_results_is_covered():
    assert {"gaga", "pshgcn", "rep", "evomoe", "mmlayout", "ppyoloe_r"} <= set(PAPERS)


def test_the_real_runner_logs_seeds_then_the_aggregate(offline, tmp_path):
    """shared.runner with tracker=wandb (offline) on a toy replication: one run per seed, the last one closed
    by the protocol with the aggregate, the comparison and the written result file."""
    from shared.runner import run as run_protocol
    from tests.conftest import compose_cfg
    from tests.test_runner import Toy

    paper_file = tmp_path / "paper.yaml"
    paper_file.write_text(
        "title: toy\nreported:\n  - {kind: paper, dataset: dblp, model: pshgcn, metric: test_micro_f1, value: 99.0,"
        " source: 'Table 1', verified: true}\ntolerances: {test_micro_f1: 5.0}\n")
    cfg = compose_cfg("paper=pshgcn", "dataset=dblp", "tracker=wandb", "tracker.mode=offline",
                      f"paths.results_dir={tmp_path / 'results'}", "scale.seeds=[1,2]")
    before = set(offline.glob("offline-run-*"))
    record = run_protocol(cfg, Toy(paper_file))
    runs = {r["name"]: r for r in (decode(f) for f in set(offline.glob("offline-run-*")) - before)}
    assert set(runs) == {"pshgcn-dblp-pshgcn-seed1", "pshgcn-dblp-pshgcn-seed2"}
    first, last = runs["pshgcn-dblp-pshgcn-seed1"], runs["pshgcn-dblp-pshgcn-seed2"]
    for one in (first, last):
        check_scheme(one)
        assert [user_keys(row) for row in one["history"]] == [{"train/loss"}] * 20  # Toy logs "loss"
        assert one["summary"]["reported/test/micro_f1"] == 99.0
    assert "aggregate" not in first["tags"] and not first["artifacts"] and "test/micro_f1/mean" not in first["summary"]
    row = record["comparison"][0]
    assert last["summary"]["test/micro_f1/mean"] == pytest.approx(record["aggregate"]["test_micro_f1"]["mean"])
    assert last["summary"]["test/micro_f1/n"] == 2 and last["summary"]["test/micro_f1/status"] == row["status"]
    assert last["summary"]["test/micro_f1/reference_kind"] == "paper"
    assert "aggregate" in last["tags"] and [a["type"] for a in last["artifacts"]] == ["result"]
    assert {"paper:pshgcn", "dataset:dblp", "model:pshgcn"} <= set(last["tags"])
    assert any(t.startswith("commit:") for t in last["tags"])


def test_a_protocol_with_every_seed_resumed_gets_an_aggregate_run_of_its_own(offline, tmp_path):
    record = committed_record("pshgcn")
    tracker = tracking.make_tracker(tracker_cfg(record), GIT)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(record))
    before = set(offline.glob("offline-run-*"))
    tracker.finish_protocol(record, path)  # no seed trained in this process: no run open
    (folder,) = set(offline.glob("offline-run-*")) - before
    run = decode(folder)
    check_scheme(run)
    assert run["name"].endswith("-aggregate") and "aggregate" in run["tags"] and "seed" not in run["tags"]
    assert run["summary"]["val/micro_f1/mean"] == pytest.approx(record["aggregate"]["val_micro_f1"]["mean"])
    assert [a["type"] for a in run["artifacts"]] == ["result"]


# --- the committed dashboard and sweep (conf/wandb/), checked offline -------------------------------------

def test_the_dashboard_spec_is_valid_and_prints_offline(capsys, monkeypatch):
    from shared import wandb_dashboard as dash

    spec = dash.load_spec()
    assert dash.problems(spec) == []
    assert set(spec["papers"]) >= set(PAPERS)
    for block in dash.plan(spec):
        for name in [c for r in block["runsets"] for c in r["columns"]] + \
                [m for p in block["panels"] for m in p.get("metrics", p.get("y", []))]:
            assert tracking.SCHEME.match(name), name
    assert dash.main([]) == 0 and "offline: nothing sent" in capsys.readouterr().out
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    assert dash.main(["--create"]) == 2 and "needs W&B online" in capsys.readouterr().err  # never reaches W&B


def test_a_broken_dashboard_spec_is_refused(tmp_path, capsys):
    from shared import wandb_dashboard as dash

    spec = dash.load_spec()
    spec["papers"]["gaga"] = {"headline": ["test_auc", "test/nonexistent"], "curves": ["loss"]}
    del spec["papers"]["rep"]
    bad = dash.problems(spec)
    assert any("'test_auc' is not a train/ val/ test/ name" in b for b in bad)
    assert any("'test/nonexistent' is in none of its result files" in b for b in bad)
    assert any("curve 'loss'" in b for b in bad) and any("'rep' has committed results but no section" in b for b in bad)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert dash.main(["--spec", str(path)]) == 2 and "test_auc" in capsys.readouterr().err


def test_the_report_and_workspace_build_with_wandb_workspaces():
    """The real library (wandb-workspaces, pinned in the dev extra: imported, never skipped) builds both from the
    committed spec, with no network and nothing saved: every run set's filter and grouping go through the parsers
    save() runs (it refused ``Tags().isin([...])``: ValueError: Unsupported expression type), and the workspace
    converts to the view save() would send."""
    from wandb_workspaces import expr

    from shared import wandb_dashboard as dash

    spec = dash.load_spec()
    report = dash.build_report(spec, entity="nobody")
    assert report.title == spec["title"] and len(report.blocks) > len(spec["papers"])
    runsets = [r for block in report.blocks for r in getattr(block, "runsets", [])]
    assert len(runsets) == 1 + 2 * len(spec["papers"])  # the overview's, then each paper's aggregates and seeds
    for runset in runsets:  # what Runset._to_model sends (it looks the project up online first, so not called here)
        filters = expr.filters_tree_to_v2(expr.expr_to_filters(runset.filters))
        assert filters["filters"], runset.filters
        assert all(expr.groupby_str_to_key(g).section == "config" for g in runset.groupby), runset.groupby
        assert all(c.startswith("summary:") for c in runset.visible_columns), runset.name
    aggregates = expr.expr_to_filters(runsets[0].filters)
    assert (aggregates.op, aggregates.key.section, aggregates.key.name, aggregates.value) == \
        ("IN", "run", "tags", ["aggregate"])  # the tag shared.tracking puts on the aggregate's run

    workspace = dash.build_workspace(spec, entity="nobody")
    view = workspace._to_model()  # the view save() would upsert; offline
    assert [s.name for s in workspace.sections] == [p for p, sec in spec["papers"].items() if sec["headline"]]
    assert view.spec.section.run_sets[0].grouping[0].name == "paper.value.name"  # the config key as W&B stores it


def test_the_wandb_sweep_is_the_hydra_sweep():
    """conf/wandb/sweep_pshgcn.yaml: the grid of conf/sweep/pshgcn.yaml, method grid, the paper's select_metric."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    hydra_sweep = yaml.safe_load((ROOT / "conf" / "sweep" / "pshgcn.yaml").read_text())
    wandb_sweep = yaml.safe_load((ROOT / "conf" / "wandb" / "sweep_pshgcn.yaml").read_text())
    params = hydra_sweep["hydra"]["sweeper"]["params"]
    overrides = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in params.items()])
    hydra_grid = {o.key_or_group: list(o.sweep_iterator()) for o in overrides}
    wandb_grid = {k: v["values"] for k, v in wandb_sweep["parameters"].items()}
    assert wandb_grid == hydra_grid
    assert wandb_sweep["method"] == "grid"
    select = yaml.safe_load((ROOT / "conf" / "paper" / "pshgcn.yaml").read_text())["select_metric"]
    assert wandb_sweep["metric"] == {"name": tracking.metric_name(select, final=True), "goal": "maximize"}
    command = wandb_sweep["command"]
    assert command[1:4] == ["${interpreter}", "-m", "replications"] and command[-1] == "${args_no_hyphens}"
    dataset = next(d["override /dataset"] for d in hydra_sweep["defaults"] if "override /dataset" in d)
    assert {"paper=pshgcn", f"dataset={dataset}"} <= set(command)
    # every job its own results folder, resolved by Hydra from the job's own config
    from tests.conftest import compose_cfg

    results_dir = next(c for c in command if c.startswith("paths.results_dir="))
    cfg = compose_cfg("paper=pshgcn", f"dataset={dataset}", results_dir, "seed=2", "model.lr=0.006", "model.K=5")
    assert cfg.paths.results_dir == "outputs/wandb_sweep/pshgcn/lr0.006_K5_seed2"
