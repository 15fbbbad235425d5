"""Only the paper's protocol writes results/: hand runs and overridden replications leave it byte-identical."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replications import replicate
from shared import destination
from shared.destination import DestinationError, protocol
from shared.runner import result_path
from tests.conftest import compose_cfg
from tests.test_runner import Toy, paper_file  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "results"
MIRROR = Path(os.environ.get("REPLICATIONS_MIRROR") or ROOT.parent / "shared" / "data")
needs_tolokers = pytest.mark.skipif(not (MIRROR / "tolokers" / "tolokers.npz").exists(),
                                    reason=f"{MIRROR}/tolokers/tolokers.npz is absent: set REPLICATIONS_MIRROR")


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def hand_run(cwd: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "REPLICATIONS_MIRROR": str(MIRROR)}
    return subprocess.run([sys.executable, "-m", "replications", *overrides], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_only_narrowing_and_how_it_runs_keep_the_protocol():
    assert replicate.config_changes(["dataset=acm", "model=rgcn", "tracker=none", "device=cuda"]) == []
    assert replicate.config_changes(["dataset=acm", "seed=1", "scale.max_epochs=3", "model.lr=0.1", "scale=smoke"]) \
        == ["seed=1", "scale.max_epochs=3", "model.lr=0.1", "scale=smoke"]


def test_results_root_is_committed_only_inside_the_protocol(tmp_path):
    cfg = compose_cfg("paper=pshgcn", "dataset=dblp")
    assert result_path(cfg) == Path("outputs/results/pshgcn/dblp/pshgcn.json")
    with protocol():
        assert result_path(cfg) == COMMITTED / "pshgcn" / "dblp" / "pshgcn.json"
        assert result_path(compose_cfg("paper=pshgcn", "dataset=dblp", "scale=smoke")).parts[:2] == \
            ("outputs", "smoke-results")
    assert result_path(cfg).parts[0] == "outputs"  # the block ends, and with it the permission
    with pytest.raises(DestinationError, match="only the paper's protocol"):
        result_path(compose_cfg("paper=pshgcn", "dataset=dblp", f"paths.results_dir={COMMITTED / 'pshgcn'}"))


@pytest.fixture
def toy_protocol(tmp_path, monkeypatch, paper_file):  # noqa: F811
    """replicate.main on the Toy paper with results/ redirected to tmp_path/committed; cwd is tmp_path."""
    committed = tmp_path / "committed"
    monkeypatch.setattr(destination, "COMMITTED", committed)
    monkeypatch.setattr(replicate.replications, "get", lambda paper: Toy(paper_file))
    pages = []
    monkeypatch.setattr(replicate.report_all, "main", lambda argv: pages.append(argv))
    monkeypatch.chdir(tmp_path)
    return committed, pages


def test_protocol_writes_results_and_the_page(toy_protocol, tmp_path):
    committed, pages = toy_protocol
    assert replicate.main(["pshgcn", "dataset=dblp", "model=pshgcn", "tracker=none"]) == 0
    record = json.loads((committed / "pshgcn" / "dblp" / "pshgcn.json").read_text())
    assert [r["seed"] for r in record["runs"]] == [1, 2, 3, 4, 5] and pages == [[]]
    assert not (tmp_path / "outputs").exists()


def test_one_seed_override_leaves_committed_result_and_partial_byte_identical(toy_protocol, tmp_path, capsys):
    committed, pages = toy_protocol
    folder = committed / "pshgcn" / "dblp"
    folder.mkdir(parents=True)
    (folder / "pshgcn.json").write_text('{"complete": true, "aggregate": "the committed record"}\n')
    (folder / "pshgcn.partial.json").write_text('{"complete": false, "runs": [], "config": {}}\n')
    before = snapshot(committed)
    assert replicate.main(["pshgcn", "dataset=dblp", "model=pshgcn", "tracker=none", "seed=1"]) == 0
    assert snapshot(committed) == before and pages == []  # nor is the results page rebuilt
    written = tmp_path / "outputs" / "results" / "seed=1" / "pshgcn" / "dblp" / "pshgcn.json"  # its overrides' folder
    assert [r["seed"] for r in json.loads(written.read_text())["runs"]] == [1]
    out = capsys.readouterr().out
    assert "not the paper's protocol (seed=1" in out and f"wrote {written.relative_to(tmp_path)}" in out


def test_hand_run_folder_is_named_by_the_overrides_that_change_what_it_computes():
    assert destination.run_name(["paper=gaga", "dataset=tolokers", "model=gaga_mlp", "tracker=none", "device=cuda",
                                 "paths.hand_runs=/x", "hydra.verbose=true"]) == "default"
    assert destination.run_name(["seed=1", "model.lr=0.1", "paper=gaga"]) == "model.lr=0.1,seed=1"  # sorted: order-free
    assert destination.run_name(["seed=1", "model.lr=0.1"]) == destination.run_name(["model.lr=0.1", "seed=1"])
    assert destination.run_name(["+model.path=/a b/c"]) == "+model.path=_a_b_c"  # one folder, no '/'
    long = destination.run_name([f"+model.x{i}=1" for i in range(40)])
    assert len(long) == destination.MAX_NAME and long != destination.run_name([f"+model.x{i}=2" for i in range(40)])
    cfg = compose_cfg("paper=pshgcn", "dataset=dblp", "model.lr=0.1")
    destination.name_hand_run(cfg, ["paper=pshgcn", "dataset=dblp", "model.lr=0.1"])
    assert result_path(cfg) == Path("outputs/results/model.lr=0.1/pshgcn/dblp/pshgcn.json")
    chosen = compose_cfg("paper=pshgcn", "dataset=dblp", "paths.results_dir=chosen/folder")
    smoke = compose_cfg("paper=pshgcn", "dataset=dblp", "scale=smoke")
    destination.name_hand_run(chosen, ["model.lr=0.1"])
    destination.name_hand_run(smoke, ["scale=smoke"])
    assert chosen.paths.results_dir == "chosen/folder" and smoke.paths.results_dir is None  # chosen, or a smoke run
    with protocol():
        committed = compose_cfg("paper=pshgcn", "dataset=dblp")
        destination.name_hand_run(committed, [])
        assert committed.paths.results_dir is None and result_path(committed).parts[-4] == "results"


def test_two_hand_runs_with_other_settings_write_two_files(toy_protocol, tmp_path):
    committed, pages = toy_protocol
    for lr in ("0.1", "0.2"):
        assert replicate.main(["pshgcn", "dataset=dblp", "model=pshgcn", "tracker=none", "seed=1", f"model.lr={lr}"]) == 0
    written = sorted(tmp_path.glob("outputs/results/*/pshgcn/dblp/pshgcn.json"))
    assert [p.parts[-4] for p in written] == ["model.lr=0.1,seed=1", "model.lr=0.2,seed=1"]
    assert [json.loads(p.read_text())["config"]["model"]["lr"] for p in written] == [0.1, 0.2]
    assert not committed.exists() and pages == []


def test_replicate_names_a_dataset_that_is_not_the_papers(capsys):
    assert replicate.main(["gaga", "dataset=dblp"]) == 2
    err = capsys.readouterr().err
    assert err == "error: dataset 'dblp' is not a gaga dataset; valid: tolokers, yelpchi, amazon, tfinance\n"


@needs_tolokers
@pytest.mark.slow
def test_hand_run_of_one_seed_writes_outputs_not_the_committed_result(tmp_path):
    """The issue's command: a committed 5-seed record once became a 1-seed one. Now results/ is untouched."""
    before = snapshot(COMMITTED / "gaga")
    partials = sorted(COMMITTED.rglob("*.partial.json"))  # committed resumable protocols may exist; no new ones
    out = hand_run(tmp_path, "paper=gaga", "dataset=tolokers", "model=gaga_mlp", "seed=1", "scale.max_epochs=2",
                   "tracker=none")
    assert out.returncode == 0, out.stderr
    assert snapshot(COMMITTED / "gaga") == before
    assert sorted(COMMITTED.rglob("*.partial.json")) == partials
    folder = "outputs/results/scale.max_epochs=2,seed=1/gaga/tolokers"  # its own folder, named by its overrides
    written = tmp_path / folder / "mlp.json"
    assert json.loads(written.read_text())["aggregate"]["test_auc"]["n"] == 1
    assert f"results go to {written}" in out.stdout and f"wrote {folder}/mlp.json" in out.stdout
    assert f"wrote {folder}/mlp.json" in (tmp_path / folder / "mlp.log").read_text()  # its log beside it


@pytest.mark.parametrize("bad,message", [
    (f"paths.results_dir={COMMITTED}", "only the paper's protocol"),
    ("+modle.lr=0.1", "unknown config key 'modle'"),
])
def test_bad_hand_run_is_one_line_exit_2_and_writes_nothing(tmp_path, bad, message):
    before = snapshot(COMMITTED / "gaga")
    out = hand_run(tmp_path, "paper=gaga", "dataset=tolokers", "model=gaga_mlp", "tracker=none", bad)
    assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert snapshot(COMMITTED / "gaga") == before
    assert not list(tmp_path.rglob("*.json"))


@needs_tolokers
@pytest.mark.slow
def test_multirun_jobs_each_write_their_own_folder(tmp_path):
    before = snapshot(COMMITTED / "gaga")
    out = hand_run(tmp_path, "--multirun", "paper=gaga", "dataset=tolokers", "model=gaga_mlp", "seed=1,2",
                   "scale.max_epochs=1", "tracker=none")
    assert out.returncode == 0, out.stderr
    written = sorted(tmp_path.glob("multirun/*/*/*/gaga/tolokers/mlp.json"))
    assert [json.loads(p.read_text())["runs"][0]["seed"] for p in written] == [1, 2]
    assert snapshot(COMMITTED / "gaga") == before and not (tmp_path / "outputs" / "results").exists()
