"""``python -m replications.report [results_dir]`` (``make report``): every page, from the result files.

Hands each paper's ``report()`` hook to shared.report, which writes the paper pages, the shared pages and
results/index.json; shared never imports a paper package, so the hooks come from here.
"""

from __future__ import annotations

import sys

import replications
from shared import report


def hooks() -> dict[str, report.Hook]:
    return {paper: replications.get(paper).report for paper in replications.available()}


def main(argv: list[str]) -> int:
    try:
        return report.main(argv, hooks=hooks())
    except ValueError as exc:  # a paper file without a tolerance, a claims file with an unknown status
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
