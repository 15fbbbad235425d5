"""The ``official:`` block of a paper.yaml, checked (interface: shared/official/__init__.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from shared.official import OfficialError
from shared.paths import PAPERS_DIR, REPO_ROOT, cache_folder
from shared.reference import PaperFileError, read_paper_yaml

PLACEHOLDERS = ("python", "seed", "data_dir", "out_dir")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_PINNED = re.compile(r"^[A-Za-z0-9_.\-\[\],]+==[A-Za-z0-9_.+!\-]+$")


def _shown(path: Path) -> str:
    """A path as a message shows it: relative to the checkout when inside it."""
    try:
        return Path(path).resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return Path(path).name


@dataclass(frozen=True)
class DatasetPlan:
    seeds: tuple[int, ...]
    command: str
    timeout_minutes: float


@dataclass(frozen=True)
class OfficialSpec:
    paper: str
    repository: str
    commit: str
    adapter: str
    requirements: tuple[str, ...]
    patches: tuple[str, ...]
    model: str
    datasets: dict[str, DatasetPlan]
    unavailable: dict[str, str]

    @property
    def home(self) -> Path:
        """<cache>/official/<paper>-<commit[:12]>: the checkout, the venv and the prepared data."""
        return cache_folder() / "official" / f"{self.paper}-{self.commit[:12]}"


def load_spec(paper: str, papers_dir: Path = PAPERS_DIR) -> OfficialSpec:
    """The paper's ``official:`` block, checked: a bad block is one line naming the key and the fix."""
    path = papers_dir / paper / "paper.yaml"
    if not path.exists():
        known = sorted(p.parent.name for p in papers_dir.glob("*/paper.yaml"))
        raise OfficialError(f"unknown paper '{paper}'; valid: {', '.join(known)}")
    try:
        block = read_paper_yaml(path).get("official")  # a YAML syntax error names the file and its line
    except PaperFileError as exc:
        raise OfficialError(str(exc)) from None
    where = f"{_shown(path)} official"
    if not isinstance(block, dict):
        raise OfficialError(f"{_shown(path)} has no `official:` block; add one (see shared/official/__init__.py)")
    for key in ("repository", "commit", "adapter", "model", "datasets"):
        if not block.get(key):
            raise OfficialError(f"{where}.{key} is missing")
    if not _COMMIT.match(str(block["commit"])):
        raise OfficialError(f"{where}.commit is '{block['commit']}'; pin a full 40-hex commit")
    requirements = tuple(block.get("requirements") or ())
    loose = [r for r in requirements if not _PINNED.match(str(r))]
    if loose:
        raise OfficialError(f"{where}.requirements: {', '.join(map(str, loose))} not pinned; write name==version")
    datasets = {}
    for name, plan in (block["datasets"] or {}).items():
        if not isinstance(plan, dict) or not plan.get("command") or not plan.get("seeds"):
            raise OfficialError(f"{where}.datasets.{name} needs `seeds` (a list) and `command`")
        unknown = {f for f in re.findall(r"{(\w*)}", plan["command"])} - set(PLACEHOLDERS)
        if unknown:
            raise OfficialError(f"{where}.datasets.{name}.command uses {{{', '.join(sorted(unknown))}}}; "
                                f"placeholders: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
        datasets[name] = DatasetPlan(tuple(int(s) for s in plan["seeds"]), str(plan["command"]),
                                     float(plan.get("timeout_minutes") or 60))
    return OfficialSpec(paper=paper, repository=str(block["repository"]), commit=str(block["commit"]),
                        adapter=str(block["adapter"]), requirements=requirements,
                        patches=tuple(str(p) for p in block.get("patches") or ()), model=str(block["model"]),
                        datasets=datasets, unavailable={str(k): str(v) for k, v in (block.get("unavailable") or {}).items()})


def plan_for(spec: OfficialSpec, dataset: str | None, seeds: list[int] | None) -> tuple[DatasetPlan, tuple[int, ...]]:
    """The dataset's plan and the seeds to run (all of the plan's, or the named subset)."""
    if dataset in spec.unavailable:
        raise OfficialError(f"{spec.paper}: the official code cannot run on '{dataset}' here: {spec.unavailable[dataset]}")
    if dataset not in spec.datasets:
        valid = ", ".join(spec.datasets) or "none"
        raise OfficialError(f"{spec.paper}: name a dataset of its official block: dataset=<{valid}>"
                            + (f" (got '{dataset}')" if dataset else ""))
    plan = spec.datasets[dataset]
    if seeds is None:
        return plan, plan.seeds
    extra = [s for s in seeds if s not in plan.seeds]
    if extra or not seeds:
        raise OfficialError(f"{spec.paper}/{dataset}: seeds={','.join(map(str, seeds))} is not a subset of the "
                            f"plan's seeds {list(plan.seeds)} (paper.yaml official.datasets.{dataset}.seeds)")
    return plan, tuple(dict.fromkeys(seeds))


