"""`make smoke` as a benchmark (`make bench-smoke`): not a paper (no paper.yaml), only its timing."""
