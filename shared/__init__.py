"""What every replication uses: data layer, metrics, runner, tracking and report.

Nothing here imports `replications`: papers depend on `shared`, never the other way round.
"""

from shared import resolvers as _resolvers  # noqa: E402,F401  (${times:...} in conf/; see its docstring)
