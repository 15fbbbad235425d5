"""``python -m replications.report [results_dir]`` (``make report``): every page, from the result files.

Hands each paper's ``report()`` hook to shared.report, which writes the paper pages, the shared pages and
results/index.json; shared never imports a paper package, so the hooks come from here. Then the README's marked
durations are rewritten from the committed records (shared.readme_times).
"""

from __future__ import annotations

import sys

import replications
from shared import readme_times, report
from shared.paths import REPO_ROOT, RESULTS


def hooks() -> dict[str, report.Hook]:
    return {paper: replications.get(paper).report for paper in replications.available()}


def main(argv: list[str]) -> int:
    try:
        code = report.main(argv, hooks=hooks())
        if not argv:  # the committed results: the README's durations follow them (shared.readme_times)
            readme_times.fill(REPO_ROOT / "README.md", RESULTS)
        return code
    except ValueError as exc:  # a paper file without a tolerance, a claims file with an unknown status
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
