#!/usr/bin/env bash
# Stage WikiText-2 for the GPU machine (it has no network and no mirror): copy the three sha256-checked
# files into data/wikitext-2/ (git-ignored, 13 MB), then pass carry=["data"] to the device run.
set -euo pipefail
src=${REPLICATIONS_MIRROR:?set REPLICATIONS_MIRROR to the data mirror}/wikitext-2
mkdir -p data/wikitext-2
cp "$src"/wiki.{train,valid,test}.tokens data/wikitext-2/
(cd data/wikitext-2 && sha256sum wiki.*.tokens)
