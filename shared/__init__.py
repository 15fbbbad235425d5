"""What every replication uses: data layer, metrics, runner, tracking and report.

Nothing here imports `replications`: papers depend on `shared`, never the other way round.
"""
