"""Run one (paper, dataset, model) over its seeds, aggregate, compare and write the result file."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from shared.atomic import write_json_atomic
from shared.codeprint import code_fingerprint, worktree_fingerprint
from shared.config_check import ConfigError, validate
from shared.destination import DestinationError, results_root
from shared.metric_ranges import check_record
from shared.paths import REPO_ROOT
from shared.perf import keep_freed_memory
from shared.progress import Protocol, write
from shared.reference import compare, load_paper, reported_for
from shared.replication import Replication, Run
from shared.report.content import rows_of
from shared.report.text import line
from shared.runinfo import environment, git_state, peak_memory_mb, portable_paths, precision_of
from shared.seeding import seed_everything
from shared.stats import aggregate
from shared.tracking import make_tracker
from shared.writable import ensure_writable

# The code this process runs is the code checked out when it started: every (dataset, model) of one
# process records this commit, even if HEAD moves (a commit, a checkout) while a long protocol runs.
PROCESS_START_GIT = git_state()


class ResultWriteError(DestinationError):
    """The result file could not be written (a full disk): every entry point prints it as one line, exit 2."""


def seeds_of(cfg: DictConfig) -> list[int]:
    if cfg.get("seed") is not None:
        return [int(cfg.seed)]
    if cfg.scale.get("seeds") is not None:
        return list(cfg.scale.seeds)
    return list(cfg.paper.protocol.seeds)


def result_path(cfg: DictConfig) -> Path:
    # results/ only for the paper's protocol; any other run under outputs/ or its paths.results_dir (shared.destination)
    return results_root(cfg) / cfg.paper.name / cfg.dataset.name / f"{cfg.model.name}.json"


def make_run(cfg: DictConfig) -> Run:
    """The one identity of a (paper, dataset, model) run that every Replication method receives."""
    return Run(paper=str(cfg.paper.name), dataset=str(cfg.dataset.name), model=str(cfg.model.name),
               seeds=tuple(seeds_of(cfg)), output_dir=result_path(cfg).parent, cfg=cfg)


def stored(summary: dict[str, Any]) -> dict[str, Any]:
    """What of train's summary goes into the record: keys starting with '_' are for evaluate only."""
    return {k: v for k, v in summary.items() if not str(k).startswith("_")}


def stored_config(cfg: DictConfig) -> dict[str, Any]:
    """The config as a record stores it: resolved, with no machine's absolute paths. A resume (and a requeued
    cluster task, replications/cluster.py) compares a record's config with this."""
    config = OmegaConf.to_container(cfg, resolve=True)
    for key, value in (config.get("paths") or {}).items():
        if isinstance(value, str):
            config["paths"][key] = portable_paths(value)
    return config


def partial_path(cfg: DictConfig) -> Path:
    return result_path(cfg).with_suffix(".partial.json")


MIXED_CODE_ENV = "REPLICATIONS_ALLOW_MIXED_CODE"  # =1: resume seeds made by other code; the record says mixed_code


class MixedCodeResumeError(ConfigError):
    """A partial file's seeds were made by other code than this checkout's: resuming would mix them silently."""


_CODE: dict[str, str | None] = {}


def code_identity(paper: str) -> str | None:
    """The fingerprint of the code this process runs for `paper` (shared.codeprint, uncommitted edits included),
    taken once per paper and process; None outside a git checkout (then no seed's code can be told)."""
    if paper not in _CODE:
        _CODE[paper] = worktree_fingerprint(paper)
    return _CODE[paper]


def seed_code(run: dict[str, Any], paper: str) -> str | None:
    """The code a finished seed ran: its recorded fingerprint, else (a partial file written before seeds recorded
    one) its commit's, else None (unknown)."""
    if run.get("code_fingerprint"):
        return run["code_fingerprint"]
    return code_fingerprint(run["git_commit"], paper) if run.get("git_commit") else None


def check_resumed_code(path: Path, runs: list[dict[str, Any]], paper: str) -> None:
    """Refuse resumed seeds made by other code than this process runs, unless REPLICATIONS_ALLOW_MIXED_CODE is set
    (then the record is marked mixed_code, as shared.merge --allow-mixed-code does)."""
    here = code_identity(paper)
    if here is None:  # not a git checkout: nothing to compare against
        return
    other = [r for r in runs if seed_code(r, paper) != here]
    if not other:
        return
    seeds = [r["seed"] for r in other]
    theirs = sorted({(seed_code(r, paper) or "unknown")[:10] for r in other})
    if os.environ.get(MIXED_CODE_ENV, "").strip() not in ("", "0"):
        print(f"note: {MIXED_CODE_ENV} is set: keeping seeds {seeds} of {path} made by other code ({', '.join(theirs)}); "
              "the record is marked mixed_code")
        return
    raise MixedCodeResumeError(
        f"{path} holds seeds {seeds} made by other code (code fingerprint {', '.join(theirs)}; this checkout's "
        f"{here[:10]}, uncommitted edits included), so resuming would mix two versions of the code in one record: "
        f"delete {path} to run every seed with this code, or set {MIXED_CODE_ENV}=1 to keep them (the record is "
        "then marked mixed_code)")


def resumable_runs(cfg: DictConfig, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Seeds already finished by an interrupted run with exactly this config (else none); refused
    (MixedCodeResumeError) when made by other code, unless REPLICATIONS_ALLOW_MIXED_CODE is set."""
    path = partial_path(cfg)
    if not path.exists():
        return []
    try:
        saved = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError):  # e.g. a disk that filled up: start over, say so
        print(f"note: ignoring {path}: it is not valid JSON; its seeds run again")
        return []
    if not isinstance(saved, dict) or saved.get("config") != config:
        print(f"note: ignoring {path}: it was made with a different config")
        return []
    check_resumed_code(path, saved["runs"], str(cfg.paper.name))
    return saved["runs"]


def top_level_keys() -> list[str]:
    """What conf/config.yaml defines: its config groups and plain keys. Nothing reads any other key."""
    base = OmegaConf.load(REPO_ROOT / "conf" / "config.yaml")
    groups = [k for entry in base.defaults if isinstance(entry, DictConfig) for k in entry if " " not in k]
    return groups + [k for k in base if k not in ("defaults", "hydra")]


def check_choices(cfg: DictConfig) -> None:
    known = top_level_keys()
    unknown = [k for k in cfg if k not in known]
    if unknown:  # e.g. +modle.lr=0.1: Hydra's `+` adds any key, and no code would ever read it
        raise ConfigError(f"unknown config key '{unknown[0]}' (no code reads it); valid: {', '.join(known)}")
    valid = list(cfg.paper.datasets)
    if cfg.dataset.name not in valid:
        raise ConfigError(
            f"paper '{cfg.paper.name}' has no dataset '{cfg.dataset.name}'; valid: {', '.join(valid)}"
        )
    models = list(cfg.paper.models)
    if cfg.model.name not in models:
        raise ConfigError(f"paper '{cfg.paper.name}' has no model '{cfg.model.name}'; valid: {', '.join(models)}")


def _first(cfg: DictConfig, *keys: str) -> Any:
    return next((v for k in keys if (v := OmegaConf.select(cfg, k, default=None)) is not None), None)


def may_stop_early(cfg: DictConfig) -> bool:
    """Whether a seed may end before max_epochs (a patience below it): the epoch bar's ETA is then an upper bound.
    Read as the papers resolve it (scale, dataset, model, then the paper's protocol)."""
    patience = _first(cfg, "scale.patience", "dataset.patience", "model.patience", "paper.protocol.patience")
    epochs = _first(cfg, "scale.max_epochs", "dataset.max_epochs", "model.max_epochs", "paper.protocol.max_epochs")
    if isinstance(patience, bool) or not isinstance(patience, int | float) or patience <= 0:
        return False
    return isinstance(epochs, bool) or not isinstance(epochs, int | float) or patience < epochs


def pin_threads(cfg: DictConfig) -> int:
    """Set torch's intra-op threads to the config's ``threads`` (conf/config.yaml; null leaves them as they are, torch's
    default) and return the count now in force. The runner does it for every paper; a stand-alone tool may too."""
    threads = cfg.get("threads")
    if threads is not None:
        torch.set_num_threads(int(threads))
    return torch.get_num_threads()


def run(cfg: DictConfig, replication: Replication, progress: Protocol | None = None) -> dict[str, Any]:
    """`progress`: the protocol's bar this run's seeds count on (replications.replicate); None: a bar of its own."""
    own = progress is None
    if own:
        progress = Protocol()  # its total: this run's seeds, once they are known
    threads_before = torch.get_num_threads()
    try:
        return _run(cfg, replication, progress)
    finally:
        torch.set_num_threads(threads_before)  # the next run of this process (replications.replicate) pins its own
        if own:
            progress.close()


def _run(cfg: DictConfig, replication: Replication, progress: Protocol) -> dict[str, Any]:
    check_choices(cfg)
    validate(cfg)
    ensure_writable(result_path(cfg).parent)  # before hours of training, not after
    keep_freed_memory()
    pin_threads(cfg)  # before any of the paper's code: its data, model, seeds and the environment recorded below
    paper = load_paper(replication.paper_file)
    reported = {
        m: e["value"]
        for m, e in reported_for(paper, cfg.dataset.name, cfg.model.name).items()
        if e["value"] is not None
    }
    tracker = make_tracker(cfg, PROCESS_START_GIT)
    env = environment(PROCESS_START_GIT, precision_of(cfg))
    spec = make_run(cfg)
    progress.start(f"{cfg.paper.name}/{cfg.dataset.name}/{cfg.model.name}", len(spec.seeds), may_stop_early(cfg))
    started = time.perf_counter()
    data = replication.load_data(spec)
    data_seconds = time.perf_counter() - started

    config = stored_config(cfg)
    done = {r["seed"]: r for r in resumable_runs(cfg, config)}
    per_seed, runs = [], []
    try:
        for seed in spec.seeds:
            if seed in done:  # finished by an interrupted earlier run of this exact config
                runs.append(done[seed])
                per_seed.append(done[seed]["metrics"])
                progress.resumed()
                write(f"[{cfg.paper.name}/{cfg.dataset.name}/{cfg.model.name}] seed {seed}: resumed from {partial_path(cfg)}")
                continue
            progress.running()
            seed_everything(seed)
            tracker.start(cfg, seed)
            t0 = time.perf_counter()
            model = replication.build_model(spec, data)
            summary = replication.train(spec, model, data, seed, tracker.log)
            metrics = replication.evaluate(spec, model, data, seed, summary)
            summary = stored(summary)
            seconds = time.perf_counter() - t0
            tracker.finish(metrics, reported)
            per_seed.append(metrics)
            # Per seed, because a resumed or merged protocol may span sessions, commits and machines: the threads
            # the seed ran with (pin_threads' count, unless the paper's code changed it)
            env["hardware"]["torch_threads"] = torch.get_num_threads()
            runs.append({"seed": seed, "metrics": metrics, "train": summary, "wall_seconds": round(seconds, 2),
                         "git_commit": env["git_commit"], "code_fingerprint": code_identity(str(cfg.paper.name)),
                         "cpu": env["hardware"]["cpu"], "gpu": env["hardware"]["gpu"],
                         "torch_threads": env["hardware"]["torch_threads"]})
            # Seeds finished so far, clearly incomplete: lets a long protocol resume after an interruption.
            write_json_atomic(partial_path(cfg), {"complete": False, "runs": runs, "config": config})
            progress.finished(seconds)
            write(f"[{cfg.paper.name}/{cfg.dataset.name}/{cfg.model.name}] seed {seed}: "
                  + ", ".join(f"{k}={v:.4f}" for k, v in metrics.items()) + f" ({seconds:.1f}s)")
    except BaseException:  # Ctrl-C or a failed seed: end the open W&B run quietly (its exit hook would print after
        tracker.abort()  # the one 'interrupted' line); the partial file keeps every finished seed
        raise

    agg = aggregate(per_seed)
    codes: dict[str, list[int]] = {}
    for r in runs:  # seeds resumed with REPLICATIONS_ALLOW_MIXED_CODE may differ: then marked as shared.merge does
        codes.setdefault((seed_code(r, str(cfg.paper.name)) or "unknown")[:10], []).append(r["seed"])
    code = ({"code_fingerprint": code_identity(str(cfg.paper.name))} if len(codes) <= 1
            else {"code_fingerprint": None, "mixed_code": codes})
    record = {
        "paper": cfg.paper.name,
        "dataset": cfg.dataset.name,
        "model": cfg.model.name,
        "scale": cfg.scale.name,
        "complete": True,
        "comparison": compare(paper, cfg.dataset.name, cfg.model.name, agg),
        "aggregate": agg,
        "runs": runs,
        "wall_seconds": round(data_seconds + sum(r["wall_seconds"] for r in runs), 2),
        "data_seconds": round(data_seconds, 2),
        "peak_memory_mb": round(peak_memory_mb(), 1),
        "environment": env,
        "config": config,
        **code,
    }
    path = result_path(cfg)
    check_record(record, path)  # an impossible value (an F1 of 150) is a bug: no result file
    try:
        write_json_atomic(path, record)  # all seeds done: only now does a result file appear
    except OSError as exc:  # a full disk: the atomic write left no half file, the partial file keeps every seed
        raise ResultWriteError(
            f"cannot write {path}: {exc.strerror or exc}; no seed is lost: all {len(runs)} are in {partial_path(cfg)} "
            f"(valid, written after the last seed): free space (or fix the folder) and run the same command again, "
            f"which resumes from it without re-running them") from exc
    partial_path(cfg).unlink(missing_ok=True)
    tracker.finish_protocol(record, path)  # cross-seed aggregate, statuses, the result file as an artifact
    write(format_rows(record))
    write(f"wrote {path}")
    return record


def format_rows(record: dict[str, Any]) -> str:
    """The record's rows as the results page prints them (shared.report.content.rows_of, shared.report.text.line)."""
    return "\n".join(line(row) for row in rows_of(record, None))
