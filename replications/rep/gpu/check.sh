#!/usr/bin/env bash
# REP at published strength on one GPU, a < 10 minute check (one H200): every base recipe of
# conf/model/rep_*.yaml on FB15k-237 and WN18RR for FRACTION of its optimiser steps (default 0.01), seed 1,
# full filtered evaluation before/after REP. It shows the recipes run on CUDA, measures steps/s (the full
# protocol's cost = steps / (steps/s)) and the MRR reached so early; the numbers are NOT the protocol's
# (scale.max_epochs caps steps: the result files say so in their config). Usage, from the repository root on
# the GPU machine, data staged by replications/rep/gpu/stage.sh and carried as data/:
#   REPLICATIONS_MIRROR=data bash replications/rep/gpu/check.sh OUT_DIR [FRACTION]
# Writes OUT_DIR/rep/<dataset>/<model>.json and OUT_DIR/check.md. Needs torch with CUDA, hydra-core, omegaconf.
# DEVICE=cpu FRACTION=0.0005 DATASETS=wn18rr MODELS=transe EXTRA="model.dim=16" runs the same script as a CPU smoke
# test (make gpu-check DEVICE=cpu runs it so, conf/gpu_check.yaml).
# threads=null: torch's default threads, the GPU machine being one's own (conf/config.yaml pins 1 on the shared CPU one).
set -euo pipefail
out=${1:?usage: check.sh OUT_DIR [FRACTION]}
fraction=${2:-${FRACTION:-0.01}}
py=${PYTHON:-python3}
export REPLICATIONS_MIRROR=${REPLICATIONS_MIRROR:-data}
"$py" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
for ds in ${DATASETS:-fb15k_237 wn18rr}; do
  for model in ${MODELS:-transe distmult complex rotate}; do
    steps=$("$py" - "$ds" "$model" "$fraction" <<'PY'
import sys
from replications.rep import base_steps, hparams
from replications.rep.budget import compose
from replications.rep.data import load
ds, model, fraction = sys.argv[1], sys.argv[2], float(sys.argv[3])
hp = hparams(compose(ds, model, []))
print(max(1, int(fraction * base_steps(hp, len(load(ds).train)))))
PY
)
    echo "== $ds $model: $steps steps ($(date +%T))"
    "$py" -m replications paper=rep "dataset=$ds" "model=rep_$model" "device=${DEVICE:-cuda}" tracker=none seed=1 \
      threads=null "scale.max_epochs=$steps" model.cache=false "paths.results_dir=$out" ${EXTRA:-}
  done
done
"$py" - "$out" <<'PY' | tee "$out/check.md"
import json, sys
from pathlib import Path
print("| dataset | model | steps | train s | steps/s | test MRR base | test MRR rep |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for path in sorted(Path(sys.argv[1]).glob("rep/*/*.json")):
    r = json.loads(path.read_text())
    run = r["runs"][0]
    t, a = run["train"], r["aggregate"]
    print(f"| {r['dataset']} | {r['model']} | {t['steps']} | {t['train_seconds']} | {t['steps'] / t['train_seconds']:.1f} "
          f"| {a['test_mrr_base']['mean']:.4f} | {a['test_mrr_rep']['mean']:.4f} |")
PY
