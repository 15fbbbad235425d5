"""``python -m replications.report [results_dir] [--full]`` (``make report``): every page, from the result files.

Hands each paper's ``report()`` hook to shared.report, which writes the paper pages, the shared pages and
results/index.json, and prints one line of counts (``--full``: every row and claim too); shared never imports a
paper package, so the hooks come from here. Then the README's marked durations are rewritten from the committed
records (shared.readme_times).
"""

from __future__ import annotations

import sys

import replications
from shared import readme_times, report
from shared.config_check import one_line
from shared.paths import REPO_ROOT, RESULTS


def hooks() -> dict[str, report.Hook]:
    return {paper: replications.get(paper).report for paper in replications.available()}


def main(argv: list[str]) -> int:
    try:
        code = report.main(argv, hooks=hooks())
        if code == 0 and report.parse_args(argv).results is None:
            # the committed results: the README's durations follow them (shared.readme_times)
            readme_times.fill(REPO_ROOT / "README.md", RESULTS)
        return code
    except ValueError as exc:  # the README's duration marks
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
