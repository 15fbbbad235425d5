"""Check out, build, prepare, run and record (the steps of shared/official/__init__.py); the command line."""


from __future__ import annotations

import hashlib
import importlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

from shared.atomic import write_json_atomic
from shared.data import DataError
from shared.official import OfficialError, OfficialParseError
from shared.official.resume import SeedLog, setup_key
from shared.official.spec import DatasetPlan, OfficialSpec, load_spec, plan_for
from shared.paths import PAPERS_DIR, REPO_ROOT, RESULTS
from shared.records import OFFICIAL_NAME
from shared.runinfo import environment, git_state, portable_paths
from shared.stats import aggregate

LOGS = Path("outputs") / "official"  # per-seed logs, relative to the checkout (git-ignored: /outputs/)
CONSTRAINTS = REPO_ROOT / "constraints.txt"
TORCH = "torch==2.13.0"  # the suite's torch; constrained so the local CPU wheel is what pip takes here


def _git(*args: str, cwd: Path | None = None) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=600)
    except subprocess.CalledProcessError as exc:
        last = (exc.stderr or exc.stdout or "").strip().splitlines()
        raise OfficialError(f"git {' '.join(args[:2])} failed: {last[-1] if last else exc.returncode}") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OfficialError(f"git {' '.join(args[:2])} failed: {exc}") from None
    return out.stdout.strip()


def is_git_folder(folder: Path) -> bool:
    """A checkout (a .git folder, or a .git file of a worktree) or a bare git dir, at `folder` itself: a plain
    folder inside some other checkout does not count."""
    return (folder / ".git").exists() or ((folder / "HEAD").is_file() and (folder / "objects").is_dir())


def code_source(spec: OfficialSpec) -> str:
    """Where the code comes from: $OFFICIAL_CODE_DIR (a checkout or a bare git dir) when set, else the repository."""
    local = os.environ.get("OFFICIAL_CODE_DIR")
    if local:
        if not Path(local).is_dir():
            raise OfficialError(f"OFFICIAL_CODE_DIR={local} is not a folder; point it at a checkout or bare git dir "
                                f"of {spec.repository}, or unset it to clone")
        if not is_git_folder(Path(local)):  # else git's own "repository ... does not exist" for a folder that does
            raise OfficialError(f"OFFICIAL_CODE_DIR={local} holds no git checkout of {spec.repository} (no .git in it, and "
                                f"not a bare git dir); get one: git clone {spec.repository} {local} (where the network "
                                "is), or unset OFFICIAL_CODE_DIR to clone it here")
        return local
    return spec.repository


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def checkout(spec: OfficialSpec, papers_dir: Path = PAPERS_DIR) -> tuple[Path, list[dict[str, str]]]:
    """A fresh checkout of the pinned commit with the patches applied; (folder, [{path, sha256}] applied)."""
    target = spec.home / "checkout"
    if target.exists():
        shutil.rmtree(target)  # never reuse: a run's outputs or an earlier patch must not leak into the next
    target.parent.mkdir(parents=True, exist_ok=True)
    source = code_source(spec)
    _git("clone", "--quiet", "--no-checkout", source, str(target))
    try:
        _git("cat-file", "-e", f"{spec.commit}^{{commit}}", cwd=target)
    except OfficialError:
        raise OfficialError(f"commit {spec.commit} is not in {source}; fetch it there or set OFFICIAL_CODE_DIR "
                            "to a copy that has it") from None
    _git("-c", "advice.detachedHead=false", "checkout", "--quiet", spec.commit, cwd=target)
    applied = []
    repo_root = papers_dir.parent
    for rel in spec.patches:
        patch = repo_root / rel
        if not patch.exists():
            raise OfficialError(f"{spec.paper}: patch {rel} (paper.yaml official.patches) does not exist")
        try:
            _git("apply", "--whitespace=nowarn", str(patch.resolve()), cwd=target)
        except OfficialError as exc:
            raise OfficialError(f"{spec.paper}: patch {rel} does not apply at {spec.commit[:12]}: {exc}") from None
        applied.append({"path": rel, "sha256": sha256(patch)})
    return target, applied


def venv_python(spec: OfficialSpec) -> Path:
    """The official venv's python, built when missing or when its requirements changed (a marker file says which)."""
    venv = spec.home / "venv"
    python = venv / "bin" / "python"
    wanted = "\n".join([TORCH, *spec.requirements, CONSTRAINTS.read_text()])
    marker = venv / ".installed"
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    if venv.exists():
        shutil.rmtree(venv)
    steps = [[sys.executable, "-m", "venv", str(venv)],
             [str(python), "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS), TORCH],
             *([[str(python), "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS), *spec.requirements]]
               if spec.requirements else [])]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr or done.stdout).strip().splitlines()
            raise OfficialError(f"{spec.paper}: building the official venv failed at `{' '.join(step[2:5])}`: "
                                f"{last[-1] if last else done.returncode}; fix the pins in paper.yaml official.requirements")
    marker.write_text(wanted)
    return python


def freeze(python: str) -> list[str]:
    done = subprocess.run([python, "-m", "pip", "freeze", "--all"], capture_output=True, text=True)
    return sorted(line for line in done.stdout.splitlines() if line and not line.startswith(("#", "-e ")))


def load_adapter(spec: OfficialSpec) -> ModuleType:
    try:
        module = importlib.import_module(spec.adapter)
    except ImportError as exc:
        raise OfficialError(f"{spec.paper}: adapter module '{spec.adapter}' cannot be imported: {exc}") from None
    for name in ("prepare", "parse"):
        if not callable(getattr(module, name, None)):
            raise OfficialError(f"{spec.paper}: adapter {spec.adapter} has no {name}() (see shared/official/__init__.py)")
    return module


def session_peak_mb(session: int) -> float:
    """The largest VmHWM (peak resident set, MB) among the live processes of process group `session` (Linux /proc;
    0 elsewhere). Read per process after its exec: a child's wait4 ru_maxrss would count the RSS of this runner
    (torch imported, ~500 MB) that it was forked from, so that is not used."""
    peak = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) != session:  # field 5, pgrp (after the comm)
                continue
            for line in (stat.parent / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024)
        except (OSError, ValueError, IndexError):  # a process that ended meanwhile
            continue
    return peak


def run_command(command: str, cwd: Path, log: Path, timeout_s: float) -> tuple[int | None, float, float, float]:
    """Run `command` through bash in `cwd`, stdout+stderr to `log`; (exit code or None on timeout, wall seconds,
    peak RSS in MB: the largest single process of the command's session, sampled every 0.2 s, CPU seconds: user +
    system of bash and every process it waited for, from wait4's rusage; wall alone misreads a busy machine)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    peak, cpu = 0.0, 0.0
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        code: int | None = None
        while True:
            peak = max(peak, session_peak_mb(proc.pid))
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                cpu = usage.ru_utime + usage.ru_stime
                break
            if time.perf_counter() - start > timeout_s:
                os.killpg(proc.pid, signal.SIGKILL)  # the whole session: bash and whatever it started
                os.wait4(proc.pid, 0)
                break
            time.sleep(0.2)
        proc.returncode = code if code is not None else -9  # reaped above; keep Popen from waiting again
    return code, round(time.perf_counter() - start, 2), round(peak, 1), round(cpu, 2)


def fill(command: str, **values: Any) -> str:
    """The command with its placeholders filled, each value shell-quoted."""
    return re.sub(r"{(\w+)}", lambda m: shlex.quote(str(values[m.group(1)])), command)


def run_seed(spec: OfficialSpec, dataset: str, plan: DatasetPlan, seed: int, python: str, code: Path,
             data_dir: Path, logs: Path, adapter: ModuleType) -> dict[str, Any]:
    out_dir = spec.home / "out" / dataset / f"seed{seed}"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    log = logs / f"seed{seed}.log"
    command = fill(plan.command, python=python, seed=seed, data_dir=data_dir, out_dir=out_dir)
    load_before = os.getloadavg()[0]
    code, wall, peak, cpu = run_command(command, code, log, plan.timeout_minutes * 60)
    where = f"{spec.paper}/{dataset} seed {seed}"
    shown = portable_paths(str(log))
    if code is None:
        raise OfficialError(f"{where}: the official command ran past timeout_minutes={plan.timeout_minutes:g}; see {shown}")
    if code != 0:
        raise OfficialError(f"{where}: the official command exited {code}; see {shown}")
    try:
        metrics = adapter.parse(log.read_text(errors="replace"), out_dir, seed)
    except OfficialParseError as exc:
        raise OfficialParseError(f"{where}: {exc}; see {shown}") from None
    if not metrics or not all(isinstance(v, (int, float)) for v in metrics.values()):
        raise OfficialParseError(f"{where}: parse() returned no numeric metrics ({metrics!r}); see {shown}")
    return {"seed": seed, "metrics": {k: float(v) for k, v in metrics.items()}, "wall_seconds": wall,
            "cpu_seconds": cpu, "peak_memory_mb": peak, "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


def run(paper: str, dataset: str | None, seeds: list[int] | None = None, *, papers_dir: Path = PAPERS_DIR,
        results: Path = RESULTS, outputs: Path = REPO_ROOT / LOGS, python: str | None = None, jobs: int = 1) -> Path:
    """Everything above for one dataset; returns the record's path. ``outputs``: where the logs (and a narrowed
    run's record) go; ``jobs``: seeds run at once; ``python``: tests only (see the module doc)."""
    started = time.perf_counter()
    git = git_state()  # at the start: a commit made while the seeds run is not credited with them
    spec = load_spec(paper, papers_dir)
    plan, todo = plan_for(spec, dataset, seeds)
    adapter = load_adapter(spec)
    code, patches = checkout(spec, papers_dir)
    interpreter = "injected (tests): " + portable_paths(python) if python else "official venv"
    python = python or str(venv_python(spec))
    data_dir = spec.home / "data" / dataset
    if data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    try:
        adapter.prepare(dataset, data_dir, code)
    except DataError as exc:
        raise OfficialError(f"{paper}/{dataset}: the adapter cannot read the suite's data: {str(exc).splitlines()[0]}") from None
    logs = outputs / paper / dataset
    packages = freeze(python)
    # Seeds a same-setup run finished before an interruption are kept (shared/official/resume.py).
    seed_log = SeedLog(logs, setup_key(spec.commit, patches, plan.command, adapter, packages))
    kept = seed_log.kept(list(todo))
    if seed_log.set_aside:
        print(f"{paper}/{dataset}: a partial record of another setup (commit, patches, command, adapter or packages "
              f"differ) is set aside: {portable_paths(str(seed_log.path))}", flush=True)
    if kept:
        print(f"{paper}/{dataset}: seeds {sorted(kept)} kept from the partial record; running "
              f"{[s for s in todo if s not in kept] or 'none'}", flush=True)

    def one(seed: int) -> dict[str, Any]:
        if seed in kept:
            return kept[seed]
        done = run_seed(spec, dataset, plan, seed, python, code, data_dir, logs, adapter)
        seed_log.add(done, time.perf_counter() - started)
        print(f"{paper}/{dataset} seed {seed}: {done['metrics']} ({done['wall_seconds']} s)", flush=True)
        return done

    # Seeds are independent runs of the official command; `jobs` > 1 runs that many at once (each its own process,
    # log and out_dir; each seed's wall time then includes the others' contention, its load_average says how much).
    # The first failing seed (in seed order) is the error; seeds not yet started are cancelled.
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(one, seed) for seed in todo]
        try:
            runs = [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    names = set(runs[0]["metrics"])
    if any(set(r["metrics"]) != names for r in runs):
        raise OfficialParseError(f"{paper}/{dataset}: seeds returned different metric names; see {portable_paths(str(logs))}")
    env = environment(git=git)
    env["command"] = portable_paths(" ".join(["python -m shared.official", paper, f"dataset={dataset}",
                                              *([f"seeds={','.join(map(str, seeds))}"] if seeds else []),
                                              *([f"jobs={jobs}"] if jobs > 1 else [])]))
    record = {"paper": paper, "dataset": dataset, "model": spec.model, "kind": "authors_code_run",
              "repository": spec.repository, "commit": spec.commit, "patches": patches, "command": plan.command,
              "seeds": list(todo), "jobs": max(1, jobs), "interpreter": interpreter, "packages": packages, "runs": runs,
              "aggregate": aggregate([r["metrics"] for r in runs]), "environment": env,
              # over every invocation that ran a seed of this record (a resumed run adds the earlier ones' time)
              "wall_seconds": round(seed_log.elapsed + time.perf_counter() - started, 2), "complete": True}
    if kept:
        record["resumed_seeds"] = sorted(kept)
    narrowed = tuple(todo) != plan.seeds  # a subset of the plan never replaces the committed record
    target = (logs if narrowed else results / paper / dataset) / OFFICIAL_NAME
    write_json_atomic(target, record)
    if not narrowed:
        seed_log.remove()  # every seed is in the record now; a narrowed run's seeds stay for the full one
    return target


def parse_args(argv: list[str]) -> tuple[str, str | None, list[int] | None, int]:
    usage = "usage: python -m shared.official <paper> dataset=<d> [seeds=1,2] [jobs=N]"
    if not argv or "=" in argv[0]:
        raise OfficialError(usage)
    values: dict[str, str] = {}
    for arg in argv[1:]:
        key, sep, value = arg.partition("=")
        if not sep or key not in ("dataset", "seeds", "jobs"):
            raise OfficialError(f"unknown argument '{arg}'; {usage}")
        values[key] = value
    seeds = None
    if values.get("seeds"):
        try:
            seeds = [int(s) for s in values["seeds"].split(",")]
        except ValueError:
            raise OfficialError(f"seeds={values['seeds']}: give integers separated by commas, e.g. seeds=1,2") from None
    jobs = values.get("jobs") or "1"
    if not jobs.isdigit() or int(jobs) < 1:
        raise OfficialError(f"jobs={jobs}: give a positive integer (seeds run at once), e.g. jobs=2")
    return argv[0], values.get("dataset") or None, seeds, int(jobs)


def main(argv: list[str] | None = None) -> int:
    try:
        paper, dataset, seeds, jobs = parse_args(sys.argv[1:] if argv is None else argv)
        path = run(paper, dataset, seeds, jobs=jobs)
    except OfficialError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {portable_paths(str(path))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
