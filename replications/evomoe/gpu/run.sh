#!/usr/bin/env bash
# EvoMoE's GPU protocol (conf/paper/evomoe_gpu.yaml) on one GPU: every model once, then the paper's page
# (with the steps-to-Switch table). Usage, from the repository root on the GPU machine (WikiText-2 staged by
# stage.sh, carried as data/):
#   REPLICATIONS_MIRROR=data bash replications/evomoe/gpu/run.sh OUT_DIR [EXPERTS]
# Writes OUT_DIR/evomoe/wikitext2/<model>.json and the page OUT_DIR/evomoe/README.md (+ claims.json, curves).
# Needs torch with CUDA, hydra-core, omegaconf, scipy, matplotlib (no network on the GPU machine: nothing is
# installed here).
# DEVICE=cpu EXTRA="scale=smoke paper.protocol.d_model=32 ..." runs the same script as a CPU smoke test.
set -euo pipefail
out=${1:?usage: run.sh OUT_DIR [EXPERTS]}
experts=${2:-8}
py=${PYTHON:-python3}
export REPLICATIONS_MIRROR=${REPLICATIONS_MIRROR:-data}
for model in ${MODELS:-evomoe/wikitext2 evomoe_switch evomoe_dense evomoe_gshard evomoe_hash evomoe_base}; do
  extra=()
  # the dense baseline has one FFN; hidden sizes stay "expert = 4 x d_model" (gshard: half, as on CPU)
  case $model in
    evomoe_dense) extra=(model.ffn_hidden=2048) ;;
    evomoe_gshard) extra=(model.ffn_hidden=1024 "model.num_experts=$experts") ;;
    *) extra=(model.ffn_hidden=2048 "model.num_experts=$experts") ;;
  esac
  echo "== $model $(date +%T)"
  "$py" -m replications paper=evomoe_gpu dataset=wikitext2 "model=$model" "device=${DEVICE:-cuda}" tracker=none \
    threads=null "paths.results_dir=$out" "${extra[@]}" ${EXTRA:-}
done
"$py" -c "import sys; from pathlib import Path; import replications; from shared import report
print(report.write_paper_pages(Path(sys.argv[1]), {'evomoe': replications.get('evomoe').report}))" "$out"
cat "$out/evomoe/README.md"
