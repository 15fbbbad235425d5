"""``python -m replications.flexmoe.report [results_dir]``: tables, claim checks and figures (in progress)."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    print("flexmoe report: not written yet", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
