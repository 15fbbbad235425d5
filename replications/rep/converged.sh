#!/usr/bin/env bash
# Issue 30: the kbc bases (ComplEx, DistMult) at published strength on both datasets, seed 1 first, one job at a
# time on one torch thread (a 2-core machine). Hand runs into outputs/rep-converged/ (git-ignored), never results/.
# Resumable: a job cut short checkpoints every checkpoint_minutes under $REPLICATIONS_CACHE/rep_embeddings and
# rerunning this script continues it bit-identically; a finished job's embeddings are cached, so it reloads in
# seconds. Each seed writes outputs/rep-converged/seed<S>/; every finished job is then merged with the seeds
# already there into results/rep/<d>/<m>.json (shared.merge: the record names the protocol seeds still missing).
# Usage, from anywhere: bash replications/rep/converged.sh [SEED]   (log: outputs/rep-converged/<d>_<m>.log)
# Measured (seed 1, one thread; minutes of training until early stopping): ComplEx FB15k-237 58, WN18RR 130;
# DistMult FB15k-237 103, WN18RR 202: ~8.2 h per seed for the four jobs (config headers: conf/model/rep_*.yaml).
set -euo pipefail
cd "$(dirname "$0")/../.."
seed=${1:-1}
py=${PYTHON:-.venv/bin/python}
export REPLICATIONS_MIRROR=${REPLICATIONS_MIRROR:-$(cd .. && pwd)/shared/data} HF_DATASETS_OFFLINE=1 OMP_NUM_THREADS=1
mkdir -p outputs/rep-converged
for spec in "fb15k_237 rep_complex" "wn18rr rep_complex" "fb15k_237 rep_distmult" "wn18rr rep_distmult"; do
  set -- $spec
  log=outputs/rep-converged/$1_$2.log
  echo "== $(date -Is) start $1 $2 seed $seed" >> "$log"
  status=0
  "$py" -m replications paper=rep "dataset=$1" "model=$2" "seed=$seed" \
      "paths.results_dir=outputs/rep-converged/seed$seed" tracker=none >> "$log" 2>&1 || status=$?
  echo "== $(date -Is) exit $status $1 $2" >> "$log"
done
# every finished seed of every job so far, one record per (dataset, model); unfinished jobs leave theirs as they are
"$py" -m shared.merge --roots results outputs/rep-converged/seed*
