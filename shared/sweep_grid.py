"""``python -m shared.sweep_grid <the sweep's overrides>``: refuse a bad grid value before the first job of a sweep.

Hydra composes every job of a ``--multirun`` before launching, but the project's checks (a model the paper does not
compare, ``lr=abc``, a seed out of range) run only as each job starts: a bad value was found after the earlier jobs
had trained for hours, and the ranking step never ran. This expands the grid as Hydra's basic sweeper does (the
sweep config's ``hydra.sweeper.params``, then the command line), composes each job's config with Hydra's compose
API and runs the checks a job runs (shared.runner.check_choices, shared.config_check), before anything starts.

On success it prints the folder the multirun will write (``hydra.sweep.dir``, resolved now): ``make sweep-<paper>``
passes it on to the multirun and ranks exactly that folder, never an older sweep's. A bad value: one line naming
it, the job it would fail and the fix, exit 2. Flags (``-m``, ``--cfg``) are the multirun's, not read here.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping
from typing import Any

from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from shared.paths import CONF_DIR

HYDRA_PREFIXES = ("hydra.", "+hydra.", "++hydra.", "~hydra.")  # Hydra's own settings: never swept, never a job's


class GridError(ValueError):
    """A grid that cannot be expanded or a value in it that a job would refuse: the message is the one line."""


def key_of(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def planned_jobs(params: Mapping[str, Any], arguments: list[str], config_loader: Any = None) -> list[list[str]]:
    """Every job's overrides in the order Hydra numbers the jobs: BasicSweeper.sweep's own expansion of the sweep
    config's params followed by the command line (a key given on both: the command line's values, at the params'
    place). shared.sweep uses it on a multirun.yaml to tell which jobs never ran."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    task = [a for a in arguments if not a.startswith(HYDRA_PREFIXES)]
    parser = OverridesParser.create(config_loader=config_loader)
    overrides = parser.parse_overrides([f"{k}={v}" for k, v in params.items()] + task)
    return BasicSweeper.split_arguments(overrides, None)[0]


def sweep_file(arguments: list[str]) -> str:
    """Where the grid's params live, as the user can open it: conf/sweep/<name>.yaml of ``+sweep=<name>``."""
    names = [a.split("=", 1)[1] for a in arguments if "=" in a and key_of(a) == "sweep"]
    return f"conf/sweep/{names[-1]}.yaml" if names else "the sweep config"


def _names(message: str, text: str) -> bool:
    """Whether `text` stands in `message` as a whole (``model.lr`` is not named by ``model.lrr`` or ``seed=1`` by ``=12``)."""
    return re.search(rf"(?<![\w.]){re.escape(text)}(?![\w.])", message) is not None


def culprit(message: str, job: list[str], swept: set[str]) -> str | None:
    """The job's swept override that the error names (the whole override, else its key, else its value), or None
    when none or several are named."""
    candidates = [o for o in job if "=" in o and key_of(o) in swept]
    for part in (lambda o: o.lstrip("+~"), key_of, lambda o: o.split("=", 1)[1]):
        named = [o for o in candidates if _names(message, part(o))]
        if len(named) == 1:
            return named[0]
    return None


def check_job(cfg: DictConfig, overrides: list[str]) -> None:
    """The checks `python -m replications` runs on a job's config before its first seed (replications/__main__.py)."""
    from shared.config_check import check_added_keys, validate
    from shared.runner import check_choices
    from shared.smoke import apply_smoke

    apply_smoke(cfg, overrides)  # a multirun job runs the paper's smoke block under scale=smoke: check what runs
    check_choices(cfg)
    check_added_keys(cfg, overrides)
    validate(cfg)


def check_grid(arguments: list[str]) -> tuple[str, int]:
    """(the sweep folder, the number of jobs) once every job's config composes and passes the checks; else GridError."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from shared.cli_errors import composition_error
    from shared.config_check import ConfigError, one_line
    from shared.data.fetch import DataError
    from shared.destination import DestinationError
    from shared.writable import check_data_folders

    arguments = [a for a in arguments if not a.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(arguments)
    except HydraException as exc:
        raise GridError(composition_error(exc, arguments)) from exc
    fixed = [a for a, o in zip(arguments, parsed) if not o.is_sweep_override()]  # a single config to read the grid from
    swept_here = {key_of(a) for a, o in zip(arguments, parsed) if o.is_sweep_override()}
    given_here = {key_of(a) for a in arguments}  # a key set on the command line: the file's values of it are not used
    where = sweep_file(arguments)
    GlobalHydra.instance().clear()  # a test or an earlier caller may have left one initialised
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        try:
            base = compose("config", overrides=fixed, return_hydra_config=True)
            folder = str(OmegaConf.select(base, "hydra.sweep.dir"))
            params = dict(OmegaConf.to_container(base.hydra.sweeper.params or {}, resolve=False))
            jobs = planned_jobs(params, arguments, GlobalHydra.instance().config_loader())
        except (HydraException, OmegaConfBaseException) as exc:
            raise GridError(composition_error(exc, arguments)) from exc
        try:
            check_data_folders()  # every job would stop on a missing mirror: say it once, before any job
        except (DataError, DestinationError) as exc:
            raise GridError(one_line(exc)) from exc
        swept = swept_here | set(params)
        refused: list[tuple[int, str | None, str]] = []  # (job number, the bad value or None, the message)
        for number, job in enumerate(jobs):
            task = [o for o in job if not o.startswith(HYDRA_PREFIXES)]
            try:
                check_job(compose("config", overrides=task), task)
            except (HydraException, OmegaConfBaseException) as exc:
                refused.append((number, culprit(composition_error(exc, task), task, swept), composition_error(exc, task)))
            except (ConfigError, KeyError) as exc:
                refused.append((number, culprit(one_line(exc), task, swept), one_line(exc)))
    if refused:
        number, bad, message = refused[0]
        if bad is None:
            what = f"sweep job {number} ({' '.join(jobs[number])})"
            fix = f"fix the value in {where}'s hydra.sweeper.params or on the command line"
        else:
            what = f"sweep grid value {bad} (job {number}: {' '.join(jobs[number])})"
            fix = ("fix or remove it on the command line" if key_of(bad) in given_here
                   else f"fix or remove it in {where} (hydra.sweeper.params)")
        others = sorted({b for _, b, _ in refused[1:] if b and b != bad})
        also = f"; also refused: {', '.join(others)}" if others else ""
        message = message.removesuffix("; fix the override or the config file")  # config_check's general fix: ours is precise
        raise GridError(f"{what}: {message}; {fix}{also} ({len(refused)} of {len(jobs)} jobs refused; no job was started)")
    return folder, len(jobs)


def main(argv: list[str]) -> int:
    if {"-h", "--help"} & set(argv):
        print(__doc__.strip())
        return 0
    started = time.perf_counter()
    try:
        folder, count = check_grid(argv)
    except GridError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C to `make sweep-<paper>` while the grid is checked: one line, as a run says it
        from shared.cli_errors import INTERRUPTED, interrupted

        print(interrupted(None, 0), file=sys.stderr)
        return INTERRUPTED
    print(f"sweep grid: all {count} jobs' configs checked ({time.perf_counter() - started:.1f}s); results go to {folder}",
          file=sys.stderr)
    print(folder)  # stdout: the folder only, for `make sweep-<paper>`
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
