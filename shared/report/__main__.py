"""``python -m shared.report [results_dir] [--full]``: every page from the result files, without any paper's hook
(``make report`` runs ``python -m replications.report``, which hands the hooks in)."""

import sys

from shared.report import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
