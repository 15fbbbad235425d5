#!/usr/bin/env bash
# Stage FB15k-237 and WN18RR for the GPU machine (no network, no mirror there): copy the sha256-declared split
# files (replications/rep/data.py SPECS) into data/{FB15k-237,WN18RR}/raw/ (git-ignored, ~27 MB), laid out like
# the mirror, then pass carry=["data"] to the device run and REPLICATIONS_MIRROR=data there.
set -euo pipefail
src=${REPLICATIONS_MIRROR:?set REPLICATIONS_MIRROR to the data mirror}
for ds in FB15k-237 WN18RR; do
  mkdir -p "data/$ds/raw"
  cp "$src/$ds"/raw/{train,valid,test}.txt "data/$ds/raw/"
  (cd "data/$ds/raw" && sha256sum train.txt valid.txt test.txt)
done
