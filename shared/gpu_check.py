"""One prepared script for one GPU window (issue 40): the parts of conf/gpu_check.yaml in plan order, within a budget.

    python -m shared.gpu_check [--device cuda|cpu] [--part NAME] [--budget-s S] [--out DIR] [--plan FILE]
    python -m shared.gpu_check merge RUN_DIR [--results results] [--force]

``run`` (the default): each part's command runs as a subprocess (shared/ never imports replications/) in its own
process group under its own budget_s, cut to what is left of the whole budget; at its timeout the group gets SIGTERM
and, 10 s later, SIGKILL, and what the part finished stays. A part whose estimate exceeds the budget left is not
started (a later, shorter one may be); a part whose peer library is absent is skipped in one line. Each part's record,
<out>/<part>.json, is written atomically the moment it ends, with the device's provenance; <out>/summary.json after
each part. DEVICE=cpu runs every part at its ``tiny`` size: the suite's check that the script still works.

``merge``: every finished part of a run into the results folder: runner records through ``python -m shared.merge
--roots`` (which refuses to replace a finished record with a lesser or different one unless --force), files copied
into results/<into>/ (an existing different file is kept unless --force). Parts are merged one by one: one refusal
leaves the others' records in.
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from shared.atomic import atomic_path, write_json_atomic
from shared.paths import REPO_ROOT, RESULTS
from shared.records import read_json

PLAN = REPO_ROOT / "conf" / "gpu_check.yaml"
DEFAULT_OUT = REPO_ROOT / "outputs" / "gpu_check"
KILL_GRACE_S = 10  # after SIGTERM, before SIGKILL: a part may write what it finished
TAIL_LINES = 15
PART_KEYS = {"name", "paper", "minutes", "budget_s", "estimate", "claims", "decides", "command", "needs", "merge", "sizes"}


class PlanError(ValueError):
    """The plan or the command line is wrong: one line says what and how to fix it."""


def load_plan(path: Path) -> dict[str, Any]:
    """The plan, checked: every part has every key, sizes gpu and tiny, and claims that its paper.yaml names."""
    import yaml

    if not path.is_file():
        raise PlanError(f"no plan at {path}; give --plan conf/gpu_check.yaml")
    plan = yaml.safe_load(path.read_text()) or {}
    parts = plan.get("parts") or []
    if not parts:
        raise PlanError(f"{path} has no parts")
    for part in parts:
        missing = sorted(PART_KEYS - set(part))
        if missing:
            raise PlanError(f"{path}: part {part.get('name', '?')!r} lacks {', '.join(missing)}")
        if set(part["sizes"]) != {"gpu", "tiny"}:
            raise PlanError(f"{path}: part {part['name']!r} needs sizes gpu and tiny, has {sorted(part['sizes'])}")
        paper_yaml = REPO_ROOT / "replications" / part["paper"] / "paper.yaml"
        claims = (yaml.safe_load(paper_yaml.read_text()) or {}).get("claims") or [] if paper_yaml.is_file() else []
        known = {c["id"] for c in claims}
        unknown = sorted(set(part["claims"]) - known)
        if unknown:
            raise PlanError(f"{path}: part {part['name']!r} names claims {unknown} that {paper_yaml} does not list")
    return plan


def provenance(device: str) -> dict[str, Any]:
    """What ran the parts: device name and memory, CUDA and driver versions, torch build; on a CPU, 'cpu'."""
    import torch

    out: dict[str, Any] = {"device": device, "torch": torch.__version__, "torch_cuda": torch.version.cuda,
                           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None}
    if device == "cuda" and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        out |= {"name": torch.cuda.get_device_name(0), "memory_gib": round(props.total_memory / 2**30, 1),
                "capability": f"{props.major}.{props.minor}", "count": torch.cuda.device_count()}
    else:
        out["name"] = "cpu"
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        out["driver"] = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 and smi.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        out["driver"] = None  # no nvidia-smi: a CPU machine
    return out


def absent_needs(part: dict[str, Any]) -> list[str]:
    return [m for m in part["needs"] if importlib.util.find_spec(m) is None]


def run_command(command: str, env: dict[str, str], timeout: float, log: Path) -> tuple[int | None, bool]:
    """(exit status, timed out): the command in its own process group, stopped as a group at its timeout."""
    with log.open("w") as sink:
        proc = subprocess.Popen(["bash", "-c", command], cwd=REPO_ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            return proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return proc.returncode, True
        except BaseException:  # Ctrl-C: the part's processes end with the script
            os.killpg(proc.pid, signal.SIGKILL)
            raise


def tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    return path.read_text(errors="replace").splitlines()[-lines:] if path.is_file() else []


def run_part(part: dict[str, Any], size: str, device: str, out: Path, left_s: float, prov: dict[str, Any],
             run_id: str) -> dict[str, Any]:
    """Run one part (or say why not) and write its record at once."""
    part_out = out / part["name"]
    record: dict[str, Any] = {"part": part["name"], "paper": part["paper"], "run_id": run_id, "size": size,
                              "claims": part["claims"], "decides": part["decides"], "estimated_minutes": part["minutes"],
                              "command": part["command"], "size_env": part["sizes"][size], "provenance": prov}
    missing = absent_needs(part)
    budget = min(float(part["budget_s"]), left_s)
    if missing:
        record |= {"status": "skipped", "why": f"needs {', '.join(missing)} (a peer library), absent here"}
    elif size == "gpu" and part["minutes"] * 60 > left_s:
        record |= {"status": "skipped", "why": f"estimated {part['minutes']} min, {left_s:.0f} s of the budget left"}
    elif budget <= 0:
        record |= {"status": "skipped", "why": "no budget left"}
    else:
        env = {**os.environ, **{k: str(v) for k, v in part["sizes"][size].items()}, "DEVICE": device,
               "PYTHON": sys.executable, "PART_OUT": str(part_out)}
        part_out.mkdir(parents=True, exist_ok=True)
        log = out / f"{part['name']}.log"
        start = time.monotonic()
        code, timed_out = run_command(part["command"], env, budget, log)
        seconds = round(time.monotonic() - start, 1)
        status = "timeout" if timed_out else "ok" if code == 0 else "failed"
        record |= {"status": status, "seconds": seconds, "budget_s": budget, "returncode": code,
                   "log": log.name, "log_tail": tail(log),
                   "outputs": sorted(str(p.relative_to(out)) for p in part_out.rglob("*") if p.is_file())}
        if status != "ok":
            record["why"] = (f"stopped at its budget of {budget:.0f} s (what it finished is under {part['name']}/)" if timed_out
                             else f"exit status {code}; see {log}")
    write_json_atomic(out / f"{part['name']}.json", record)
    return record


def line(record: dict[str, Any]) -> str:
    took = f" in {record['seconds']:.0f} s" if "seconds" in record else ""
    why = f": {record['why']}" if record.get("why") else ""
    claims = ", ".join(record["claims"]) or "no claim"
    return f"{record['part']:<10} {record['status']}{took} ({claims}){why}"


def run(args: argparse.Namespace) -> int:
    plan = load_plan(args.plan)
    parts = plan["parts"]
    if args.part:
        chosen = [p for p in parts if p["name"] in args.part.split(",")]
        unknown = sorted(set(args.part.split(",")) - {p["name"] for p in parts})
        if unknown:
            raise PlanError(f"unknown part {unknown[0]!r}; the plan's parts: {', '.join(p['name'] for p in parts)}")
        parts = chosen
    if args.device not in ("cuda", "cpu"):
        raise PlanError(f"DEVICE={args.device!r}: give cuda (the check) or cpu (the tiny check of the script)")
    size = args.size or ("gpu" if args.device == "cuda" else "tiny")
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise PlanError("DEVICE=cuda but torch sees no GPU; DEVICE=cpu runs the tiny check of the script")
    budget = float(args.budget_s if args.budget_s is not None else plan["budget_s"])
    if budget <= 0:
        raise PlanError(f"BUDGET_S={budget:g}: give a positive number of seconds")
    run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or DEFAULT_OUT / run_id
    out.mkdir(parents=True, exist_ok=True)
    prov = provenance(args.device)
    print(f"gpu-check {run_id} on {prov['name']} (torch {prov['torch']}, CUDA {prov['torch_cuda']}, driver "
          f"{prov['driver']}), size {size}, budget {budget:.0f} s, {len(parts)} part(s) -> {out}", flush=True)
    start = time.monotonic()
    records = []
    for part in parts:
        record = run_part(part, size, args.device, out, budget - (time.monotonic() - start), prov, run_id)
        records.append(record)
        print(line(record), flush=True)
        parts_so_far = {r["part"]: {k: r.get(k) for k in ("status", "seconds", "why", "claims")} for r in records}
        write_json_atomic(out / "summary.json", {"run_id": run_id, "plan": str(args.plan), "size": size, "budget_s": budget,
                                                 "seconds": round(time.monotonic() - start, 1), "provenance": prov,
                                                 "parts": parts_so_far})
    done = [r["part"] for r in records if r["status"] == "ok"]
    print(f"summary: {len(done)} of {len(records)} part(s) finished in {time.monotonic() - start:.0f} s "
          f"({', '.join(done) or 'none'}); records in {out}; bring them in: make gpu-merge RUN={out}")
    return 0 if all(r["status"] in ("ok", "skipped") for r in records) else 1


def copy_file(src: Path, target: Path, force: bool) -> str:
    """Copy one measurement file in, never over a different one unless forced."""
    if target.is_file() and filecmp.cmp(src, target, shallow=False):
        return f"{target} unchanged"
    if target.is_file() and not force:
        raise PlanError(f"refusing to replace {target} with {src} (a different measurement): pass FORCE=1 to replace it")
    with atomic_path(target) as tmp:
        shutil.copyfile(src, tmp)
    return f"wrote {target}"


def merge(args: argparse.Namespace) -> int:
    plan = {p["name"]: p for p in load_plan(args.plan)["parts"]}
    run_dir: Path = args.run
    if not (run_dir / "summary.json").is_file():
        raise PlanError(f"{run_dir} is not a gpu-check run folder (no summary.json); give RUN=outputs/gpu_check/<run id>")
    failures = 0
    for name, part in plan.items():
        if not (run_dir / f"{name}.json").is_file():
            continue  # not run in this run (PART=...)
        record, error = read_json(run_dir / f"{name}.json")
        if error is not None or record.get("status") != "ok":
            print(f"{name:<10} not merged: {error or record.get('status')}")
            continue
        how = part["merge"]
        if how == "none":
            print(f"{name:<10} kept in {run_dir / name} (a measurement, not a protocol record)")
        elif how == "records":
            cmd = [sys.executable, "-m", "shared.merge", "--roots", str(args.results), str(run_dir / name / "records"),
                   *(["--force"] if args.force else [])]
            done = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
            said = (done.stdout + done.stderr).strip().splitlines()
            print(f"{name:<10} {'merged' if done.returncode == 0 else 'refused'}: " + " | ".join(said[-3:]))
            failures += done.returncode != 0
        else:
            files = sorted((run_dir / name / "files").glob(how["files"]))
            try:
                said = [copy_file(f, args.results / how["into"] / f.name, args.force) for f in files]
                print(f"{name:<10} {'; '.join(said) or 'no file matched ' + how['files']}")
            except PlanError as exc:
                print(f"{name:<10} refused: {exc}")
                failures += 1
    return 2 if failures else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m shared.gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--plan", type=Path, default=PLAN)
    if argv[:1] == ["merge"]:
        parser.add_argument("run", type=Path, help="a run folder, outputs/gpu_check/<run id>")
        parser.add_argument("--results", type=Path, default=RESULTS)
        parser.add_argument("--force", action="store_true", help="replace finished records and files (each says so)")
        argv = argv[1:]
        action = merge
    else:
        parser.add_argument("--device", default=os.environ.get("DEVICE") or "cuda")
        parser.add_argument("--part", default=None, help="comma list of part names (default: every part)")
        parser.add_argument("--budget-s", type=float, default=None, help="seconds of work in all (default: the plan's)")
        parser.add_argument("--size", choices=("gpu", "tiny"), default=None, help="default: gpu on cuda, tiny on cpu")
        parser.add_argument("--out", type=Path, default=None, help="run folder (default outputs/gpu_check/<run id>)")
        action = run
    args = parser.parse_args(argv)
    try:
        return action(args)
    except (PlanError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: the parts finished so far are recorded", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
