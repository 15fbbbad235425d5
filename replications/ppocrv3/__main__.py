"""`python -m replications.ppocrv3 [results_root]`: rebuild the ppocrv3 table and figures from the details files."""

import sys

from replications.ppocrv3.figures import main

main(sys.argv[1:])
