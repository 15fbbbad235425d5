"""python -m shared.official <paper> dataset=<d> [seeds=1,2] (make official-<paper> dataset=<d>)."""

import sys

from shared.official.runner import main

sys.exit(main())
