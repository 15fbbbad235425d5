"""shared.official end to end on a fake "official repository": a git repo made here, whose main.py reads what
the adapter prepared and prints a metric in its own format; a patch file changes it. The run uses this test's
interpreter instead of building a venv (runner.run's documented test hook; the fake code needs no packages).

Checked: adapter -> checkout at the pinned commit -> patch -> run per seed -> parse -> record; the record as the
authors_code_run reference on the results page (replacing a hand-copied one); a non-zero exit, a parse failure
and a timeout each name the seed and its log and write no record; a narrowed run never replaces the committed
record; a bad official block is one line; and the per-seed paired comparison.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from shared.official import OfficialError, OfficialParseError, compare
from shared.official.runner import main, run
from shared.official.spec import load_spec
from shared.records import complete_records
from shared.reference import load_paper
from shared.report.content import build_report
from shared.report.paper_hook import load_paper_results
from shared.verdict import CONTRADICTED, INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, REPRODUCED, SUPPORTED

PAPER, DATASET, MODEL = "fakepaper", "toy", "fakemodel"
# main.py prints "RESULT seed=<s> acc=<value>": value = 50 + what prepare() wrote + seed * SCALE. The patch
# turns SCALE from 1 into 2, so a record shows whether the patch was applied.
MAIN = textwrap.dedent("""\
    import sys, time
    from pathlib import Path
    SCALE = 1
    seed, data = int(sys.argv[1]), Path(sys.argv[2])
    if (data / "fail").exists() and str(seed) in (data / "fail").read_text().split():
        print("boom", file=sys.stderr); sys.exit(3)
    if (data / "garble").exists() and str(seed) in (data / "garble").read_text().split():
        print("no metrics here"); sys.exit(0)
    if (data / "sleep").exists():
        time.sleep(30)
    base = float((data / "base.txt").read_text())
    time.sleep(0.5)  # "training": long enough for the runner's 0.2 s memory sampling to see this process
    print(f"epoch 1 loss 0.5\\nRESULT seed={seed} acc={base + 50 + seed * SCALE:.4f}")
    """)
ADAPTER = textwrap.dedent("""\
    import re
    from pathlib import Path
    from shared.official import OfficialParseError

    def prepare(dataset, data_dir, checkout):
        assert (checkout / "main.py").exists()
        (data_dir / "base.txt").write_text("10")

    def parse(stdout, out_dir, seed):
        found = re.findall(rf"^RESULT seed={seed} acc=([0-9.]+)$", stdout, re.M)
        if len(found) != 1:
            raise OfficialParseError(f"expected one RESULT line for seed {seed}, found {len(found)}")
        return {"test_acc": float(found[0]), "best_epoch": 7.0}  # no tolerance for best_epoch: never a reference
    """)


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_cache: Path) -> dict:
    """A fake official repo (two commits: the pinned one and a later one), a paper folder with its official block,
    patch and adapter, an empty results root and outputs folder."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "main.py").write_text(MAIN)
    git("add", "main.py", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "pinned", cwd=repo)
    pinned = git("rev-parse", "HEAD", cwd=repo)
    (repo / "main.py").write_text(MAIN.replace("SCALE = 1", "SCALE = 100"))
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "later", cwd=repo)
    monkeypatch.setenv("OFFICIAL_CODE_DIR", str(repo))

    root = tmp_path / "checkout"
    folder = root / "replications" / PAPER
    (folder / "official").mkdir(parents=True)
    work = tmp_path / "patchwork"
    git("clone", "-q", str(repo), str(work), cwd=tmp_path)
    git("checkout", "-q", pinned, cwd=work)
    (work / "main.py").write_text(MAIN.replace("SCALE = 1", "SCALE = 2"))
    (folder / "official" / "scale.patch").write_text(git("diff", cwd=work) + "\n")
    adapters = tmp_path / "adapters"
    adapters.mkdir()
    (adapters / "fake_official_adapter.py").write_text(ADAPTER)
    monkeypatch.syspath_prepend(str(adapters))
    sys.modules.pop("fake_official_adapter", None)
    paper = {
        "title": "A fake paper", "tolerances": {"test_acc": 1.0},
        "reported": [{"dataset": DATASET, "model": MODEL, "metric": "test_acc", "value": 99.0, "kind": "authors_code_run",
                      "source": "a hand-copied run", "verified": False, "provenance": {"by": "hand"}},
                     {"dataset": DATASET, "model": MODEL, "metric": "test_acc", "value": 70.0, "kind": "secondary",
                      "source": "a copy", "verified": False, "copied_by": "someone"}],
        "official": {"repository": "https://example.invalid/fake/official", "commit": pinned,
                     "adapter": "fake_official_adapter", "requirements": [],
                     "patches": [f"replications/{PAPER}/official/scale.patch"], "model": MODEL,
                     "datasets": {DATASET: {"seeds": [1, 2, 3], "timeout_minutes": 1,
                                            "command": "{python} main.py {seed} {data_dir} --out {out_dir}"}},
                     "unavailable": {"big": "needs 40 GB of memory"}}}
    (folder / "paper.yaml").write_text(yaml.safe_dump(paper, sort_keys=False))
    return {"papers": root / "replications", "results": root / "results", "outputs": tmp_path / "outputs",
            "repo": repo, "pinned": pinned, "paper_file": folder / "paper.yaml", "cache": fresh_cache}


def go(fake: dict, seeds: list[int] | None = None, dataset: str = DATASET, jobs: int = 1) -> Path:
    return run(PAPER, dataset, seeds, papers_dir=fake["papers"], results=fake["results"], outputs=fake["outputs"],
               python=sys.executable, jobs=jobs)


def official_json(fake: dict) -> Path:
    return fake["results"] / PAPER / DATASET / "official.json"


def test_the_whole_path_writes_a_record_at_the_pinned_commit_with_the_patch(fake):
    path = go(fake)
    assert path == official_json(fake)
    record = json.loads(path.read_text())
    # 50 + 10 (prepared) + seed * 2 (the patch's SCALE; the pinned code says 1, the later commit 100)
    assert [(r["seed"], r["metrics"]) for r in record["runs"]] == [(s, {"test_acc": 60.0 + 2 * s, "best_epoch": 7.0})
                                                                  for s in (1, 2, 3)]
    assert record["aggregate"]["test_acc"]["mean"] == pytest.approx(64.0)
    assert record["aggregate"]["test_acc"]["std"] == pytest.approx(2.0)  # ddof=1 of 62, 64, 66
    assert record["commit"] == fake["pinned"] and record["kind"] == "authors_code_run" and record["complete"] is True
    assert record["model"] == MODEL and record["dataset"] == DATASET and record["seeds"] == [1, 2, 3]
    assert [p["path"] for p in record["patches"]] == [f"replications/{PAPER}/official/scale.patch"]
    assert len(record["patches"][0]["sha256"]) == 64
    assert record["interpreter"].startswith("injected (tests)")
    assert any(line.startswith("pytest==") for line in record["packages"])
    # main.py's own peak (a bare python, ~10 MB), not this test process's (torch imported: hundreds of MB)
    assert all(r["wall_seconds"] >= 0 and 1 < r["peak_memory_mb"] < 100 for r in record["runs"])
    # CPU time of the command's processes (a python start-up at least), never more than the cores allow
    assert all(0 < r["cpu_seconds"] <= r["wall_seconds"] * os.cpu_count() + 0.1 for r in record["runs"])
    assert record["environment"]["hardware"]["cpu"] and "seeds" not in record["environment"]["command"]
    for seed in (1, 2, 3):  # each seed's output is kept as its log
        assert f"RESULT seed={seed}" in (fake["outputs"] / PAPER / DATASET / f"seed{seed}.log").read_text()
    assert str(fake["repo"].parent) not in json.dumps(record)  # no path of this machine


def test_the_record_is_the_authors_code_run_reference_on_the_page(fake):
    go(fake)
    suite = {"paper": PAPER, "dataset": DATASET, "model": MODEL, "scale": "full", "complete": True,
             "runs": [{"seed": s, "metrics": {"test_acc": v}} for s, v in ((1, 63.0), (2, 64.5), (3, 66.0))],
             "aggregate": {"test_acc": {"mean": 64.5, "std": 1.5, "n": 3, "ci95_low": 60.8, "ci95_high": 68.2}},
             "comparison": [], "wall_seconds": 1.0}
    (fake["results"] / PAPER / DATASET / f"{MODEL}.json").write_text(json.dumps(suite))
    report = build_report(fake["results"], fake["papers"])
    (section,) = report.papers
    (row,) = section.rows  # official.json is not a second record of the model
    assert (row.kind, row.reported, row.status) == ("authors_code_run", pytest.approx(64.0), REPRODUCED)
    assert row.difference == pytest.approx(0.5) and "official.json" in row.source
    assert [(o["kind"], o["value"]) for o in row.others] == [("secondary", 70.0)]  # the hand-copied 99.0 is gone
    assert list(load_paper_results(fake["results"], PAPER).records) == [(DATASET, MODEL)]
    assert [p.name for p, _ in complete_records(fake["results"])] == [f"{MODEL}.json"]
    # Judged against a suite mean 1.5 away: not reproduced (tolerance 1.0).
    paper = load_paper(fake["paper_file"], results_root=fake["results"])
    (entry,) = [e for e in paper["reported"] if e["kind"] == "authors_code_run"]  # test_acc only, not best_epoch
    assert entry["value"] == pytest.approx(64.0) and entry["n"] == 3 and entry["provenance"]["seeds"] == [1, 2, 3]
    from shared.reference import compare as compare_reference
    (far,) = compare_reference(paper, DATASET, MODEL, {"test_acc": {**suite["aggregate"]["test_acc"], "mean": 65.5}})
    assert far["status"] == NOT_REPRODUCED
    # Without a results root holding the record, the hand-copied entry is the reference again.
    assert load_paper(fake["paper_file"])["reported"][0]["value"] == 99.0


@pytest.mark.parametrize("trigger, error, words", [
    ("fail", OfficialError, r"fakepaper/toy seed 2: the official command exited 3; see .*seed2\.log"),
    ("garble", OfficialParseError, r"fakepaper/toy seed 2: expected one RESULT line for seed 2, found 0; see .*seed2\.log"),
])
def test_a_failing_or_unparsable_seed_names_it_and_writes_no_record(fake, monkeypatch, trigger, error, words):
    import fake_official_adapter as adapter

    def prepare(dataset, data_dir, checkout):
        (data_dir / "base.txt").write_text("10")
        (data_dir / trigger).write_text("2")

    monkeypatch.setattr(adapter, "prepare", prepare)
    with pytest.raises(error, match=words):
        go(fake)
    assert not official_json(fake).exists()
    assert "boom" in (fake["outputs"] / PAPER / DATASET / "seed2.log").read_text() or trigger == "garble"


def test_seeds_run_at_once_give_the_same_record_and_a_failure_still_names_its_seed(fake, monkeypatch):
    record = json.loads(go(fake, jobs=3).read_text())
    assert [(r["seed"], r["metrics"]["test_acc"]) for r in record["runs"]] == [(1, 62.0), (2, 64.0), (3, 66.0)]
    assert record["jobs"] == 3 and "jobs=3" in record["environment"]["command"]
    import fake_official_adapter as adapter

    monkeypatch.setattr(adapter, "prepare", lambda d, data_dir, c: ((data_dir / "base.txt").write_text("10"),
                                                                    (data_dir / "fail").write_text("1 3")))
    official_json(fake).unlink()
    with pytest.raises(OfficialError, match="seed 1: the official command exited 3"):
        go(fake, jobs=2)
    assert not official_json(fake).exists()


def test_a_timeout_is_an_error_and_an_earlier_record_stays(fake, monkeypatch):
    go(fake)
    before = official_json(fake).read_text()
    import fake_official_adapter as adapter

    monkeypatch.setattr(adapter, "prepare", lambda d, data_dir, c: (data_dir / "sleep").write_text(""))
    block = yaml.safe_load(fake["paper_file"].read_text())
    block["official"]["datasets"][DATASET]["timeout_minutes"] = 0.01  # 0.6 s; main.py sleeps 30 s
    fake["paper_file"].write_text(yaml.safe_dump(block))
    with pytest.raises(OfficialError, match=r"seed 1: the official command ran past timeout_minutes=0.01; see .*seed1\.log"):
        go(fake)
    assert official_json(fake).read_text() == before


def test_a_narrowed_run_never_replaces_the_committed_record(fake):
    path = go(fake, seeds=[2])
    assert path == fake["outputs"] / PAPER / DATASET / "official.json" and not official_json(fake).exists()
    assert [r["seed"] for r in json.loads(path.read_text())["runs"]] == [2]
    with pytest.raises(OfficialError, match=r"seeds=7 is not a subset of the plan's seeds \[1, 2, 3\]"):
        go(fake, seeds=[7])


def test_an_unavailable_or_unknown_dataset_says_why(fake):
    with pytest.raises(OfficialError, match="cannot run on 'big' here: needs 40 GB of memory"):
        go(fake, dataset="big")
    with pytest.raises(OfficialError, match=r"dataset=<toy> \(got 'tiny'\)"):
        go(fake, dataset="tiny")


@pytest.mark.parametrize("change, words", [
    (lambda o: o.update(commit="abc123"), "pin a full 40-hex commit"),
    (lambda o: o.update(requirements=["numpy"]), "numpy not pinned"),
    (lambda o: o["datasets"][DATASET].update(command="{python} main.py {split}"), r"uses \{split\}"),
    (lambda o: o.pop("adapter"), "official.adapter is missing"),
])
def test_a_bad_official_block_is_one_line(fake, change, words):
    block = yaml.safe_load(fake["paper_file"].read_text())
    change(block["official"])
    fake["paper_file"].write_text(yaml.safe_dump(block))
    with pytest.raises(OfficialError, match=words):
        load_spec(PAPER, fake["papers"])


def test_a_commit_missing_from_the_source_or_a_stale_patch_is_refused(fake):
    block = yaml.safe_load(fake["paper_file"].read_text())
    block["official"]["commit"] = "0" * 40
    fake["paper_file"].write_text(yaml.safe_dump(block))
    with pytest.raises(OfficialError, match="commit 0{40} is not in"):
        go(fake)
    block["official"]["commit"] = git("rev-parse", "HEAD", cwd=fake["repo"])  # the later commit: the patch misses
    fake["paper_file"].write_text(yaml.safe_dump(block))
    with pytest.raises(OfficialError, match="patch replications/fakepaper/official/scale.patch does not apply"):
        go(fake)
    assert not official_json(fake).exists()


def test_the_command_line_fails_in_one_line(capsys):
    assert main(["no_such_paper", "dataset=x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: unknown paper 'no_such_paper'; valid:")
    assert main(["gaga", "dataset=tolokers", "seeds=a"]) == 2
    assert "seeds=a: give integers" in capsys.readouterr().err
    assert main(["gaga", "dataset=tolokers", "jobs=0"]) == 2
    assert "jobs=0: give a positive integer" in capsys.readouterr().err


def test_paired_differences_and_agreement_by_hand():
    official = {"runs": [{"seed": s, "metrics": {"auc": v}} for s, v in ((0, 80.0), (1, 81.0), (2, 79.0), (5, 70.0))]}
    suite = {"runs": [{"seed": s, "metrics": {"auc": v}} for s, v in ((0, 80.5), (1, 81.5), (2, 79.2), (3, 90.0))]}
    c = compare.paired(official, suite, "auc")
    assert c["seeds"] == [0, 1, 2] and c["differences"] == pytest.approx([0.5, 0.5, 0.2])
    assert c["only_official"] == [5] and c["only_suite"] == [3]
    assert c["mean_difference"] == pytest.approx(0.4)
    # std of (0.5, 0.5, 0.2), ddof=1 = 0.1732; t(0.975, 2) = 4.3027; half-width 0.4303
    assert c["ci95"] == pytest.approx([0.4 - 0.4303, 0.4 + 0.4303], abs=1e-3)
    assert compare.agreement(c, tolerance=1.0) == SUPPORTED  # [-0.03, 0.83] within ±1
    assert compare.agreement(c, tolerance=0.5) == INCONCLUSIVE  # straddles +0.5
    assert compare.agreement_status(1.2, 2.0, 1.0) == CONTRADICTED
    assert compare.agreement_status(-3.0, -1.5, 1.0) == CONTRADICTED
    assert compare.agreement({"n": 1, "ci95": [float("nan")] * 2}, 1.0) == NOT_RUN


def test_an_interrupted_run_resumes_with_the_seeds_it_finished_and_another_setup_is_set_aside(fake, monkeypatch):
    import fake_official_adapter as adapter

    def prepare(dataset, data_dir, checkout):  # seed 3 fails: seeds 1 and 2 are finished when the run stops
        (data_dir / "base.txt").write_text("10")
        (data_dir / "fail").write_text("3")

    monkeypatch.setattr(adapter, "prepare", prepare)
    with pytest.raises(OfficialError, match="seed 3: the official command exited 3"):
        go(fake)
    partial = fake["outputs"] / PAPER / DATASET / "official.partial.json"
    assert [r["seed"] for r in json.loads(partial.read_text())["runs"]] == [1, 2] and not official_json(fake).exists()
    for seed in (1, 2):  # a kept seed is never run again: its log (the only trace of a run) is gone
        (fake["outputs"] / PAPER / DATASET / f"seed{seed}.log").unlink()
    monkeypatch.setattr(adapter, "prepare", lambda d, data_dir, c: (data_dir / "base.txt").write_text("10"))
    record = json.loads(go(fake).read_text())
    assert [(r["seed"], r["metrics"]["test_acc"]) for r in record["runs"]] == [(1, 62.0), (2, 64.0), (3, 66.0)]
    assert record["resumed_seeds"] == [1, 2] and not partial.exists()
    assert not (fake["outputs"] / PAPER / DATASET / "seed1.log").exists()
    # A partial record of another setup (here: another command) is never merged: every seed runs again.
    go(fake, seeds=[1])
    assert json.loads(partial.read_text())["runs"][0]["seed"] == 1
    block = yaml.safe_load(fake["paper_file"].read_text())
    block["official"]["datasets"][DATASET]["command"] += " --extra"
    fake["paper_file"].write_text(yaml.safe_dump(block))
    record = json.loads(go(fake).read_text())
    assert "resumed_seeds" not in record and (fake["outputs"] / PAPER / DATASET / "seed1.log").exists()
