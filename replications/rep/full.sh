#!/usr/bin/env bash
# The whole REP protocol at published strength, one command: every (dataset, base model) of
# conf/paper/rep.yaml `replicate`, seeds 1-3 as parallel jobs (one process per seed, each running the 8
# pairs in turn), then joined with the one merge front-end (python -m shared.merge --roots) into results/rep/ and
# the results pages rebuilt (python -m replications.report: REP's page is its report(), replications/rep/report.py). Usage, from the repository root:
#   bash replications/rep/full.sh [DEVICE] [SEEDS]        e.g.  bash replications/rep/full.sh cuda "1 2 3"
# Cost: on a GPU, not measured yet (replications/rep/gpu/check.sh measures each recipe's steps/s: the full
# cost is steps / (steps/s)); on this project's 2-core CPU, per seed and one thread, ~3.8 / ~6.8 CPU h for each
# 1-vs-all model (FB15k-237 / WN18RR) and results/rep/README.md (bench_steps) for TransE/RotatE. Per-seed roots stay in
# outputs/rep-seed<N>/ (git-ignored outputs); a seed cut short leaves its finished pairs there, and rerunning
# resumes (the runner skips finished result files' seeds). EXTRA="..." appends Hydra overrides to every run
# (e.g. EXTRA="scale.max_epochs=200" for a capped check; such numbers are not the protocol).
set -euo pipefail
device=${1:-cpu}
seeds=${2:-"1 2 3"}
py=${PYTHON:-.venv/bin/python}
[ -x "$py" ] || py=python3
pairs=$("$py" - <<'PY'
from omegaconf import OmegaConf
plan = OmegaConf.load("conf/paper/rep.yaml").replicate
print(" ".join(f"{d}:{m}" for d in plan.datasets for m in plan.models))
PY
)
mkdir -p outputs
for seed in $seeds; do
  (
    for pair in $pairs; do
      "$py" -m replications paper=rep "dataset=${pair%%:*}" "model=${pair##*:}" "device=$device" tracker=none \
        "seed=$seed" "paths.results_dir=outputs/rep-seed$seed" ${EXTRA:-}
    done
  ) > "outputs/rep-seed$seed.log" 2>&1 &
  echo "seed $seed: pid $! (log outputs/rep-seed$seed.log)"
done
wait
roots=()
for seed in $seeds; do roots+=("outputs/rep-seed$seed"); done
"$py" -m shared.merge --roots results "${roots[@]}"
"$py" -m replications.report
