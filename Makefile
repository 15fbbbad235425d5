# Every target creates the virtual environment first if it is missing.
# Papers: any folder replications/<paper>/ with a paper.yaml; `make replicate-<paper>` runs its protocol.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# The data mirror beside the checkout (as in CI) when there is one; an explicit value wins.
export REPLICATIONS_MIRROR ?= $(if $(wildcard ../shared/data/.),$(abspath ../shared/data))
export HF_DATASETS_OFFLINE ?= 1
PAPERS := $(patsubst replications/%/paper.yaml,%,$(wildcard replications/*/paper.yaml))
# `make replicate-pshgcn dataset=acm` narrows a replication to one dataset (or model=...).
NARROW := $(if $(dataset),dataset=$(dataset)) $(if $(model),model=$(model))

.PHONY: venv test smoke ladder bench-gaga-grouping report readme-times verify lint clean-cache gpu-check gpu-merge $(addprefix replicate-,$(PAPERS))

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	touch $@

# --durations=20: the 20 slowest tests, so a slow one is seen (issue 38).
test: venv
	$(PY) -m pytest -q --durations=20

lint: venv
	$(VENV)/bin/ruff check shared replications tests

# `make smoke dataset=acm` (or model=...) runs the papers that have it (conf/paper/<paper>.yaml datasets, models and
# replicate.models; a comma list needs all of it), not every paper: the first without it stopped the loop.
SMOKE_PAPERS = $(shell $(PY) -c 'import sys; from omegaconf import OmegaConf; \
	want = [sys.argv[1].split(",") if sys.argv[1] else [], sys.argv[2].split(",") if sys.argv[2] else []]; \
	confs = {p: OmegaConf.load(f"conf/paper/{p}.yaml") for p in sys.argv[3:]}; \
	has = {p: [list(c.datasets), [*c.models, *c.get("replicate", {}).get("models", [])]] for p, c in confs.items()}; \
	keep = [p for p in has if all(set(w) <= set(h) for w, h in zip(want, has[p]))]; \
	print(" ".join(keep)) if keep else print("error: no paper has " + " and ".join(f"{k}={v}" for k, v in zip(("dataset", "model"), sys.argv[1:3]) if v) \
	+ "; datasets: " + ", ".join(sorted({d for h in has.values() for d in h[0]})) + "; e.g. make smoke dataset=dblp", file=sys.stderr)' \
	'$(dataset)' '$(model)' $(PAPERS))

smoke: venv
	@papers="$(SMOKE_PAPERS)"; test -n "$$papers" || exit 2; \
	for p in $$papers; do echo "$(PY) -m replications.replicate $$p scale=smoke tracker=none $(NARROW)"; \
	$(PY) -m replications.replicate $$p scale=smoke tracker=none $(NARROW) || exit 1; done

# Every key=value on the make command line reaches the run as an override (make replicate-gaga dataset=tolokers
# tracker=none device=cuda seed=1): a name with a small letter is a config key (the run refuses an unknown one in one
# line); names in capitals (ARGS, VENV, REPLICATIONS_MIRROR, WANDB_MODE) are make's or the environment's.
lowercase = $(strip $(foreach c,a b c d e f g h i j k l m n o p q r s t u v w x y z,$(findstring $(c),$(1))))
CLI_OVERRIDES = $(strip $(foreach v,$(filter-out dataset model,$(sort $(.VARIABLES))),$(if $(and \
	$(filter command line,$(origin $(v))),$(call lowercase,$(v))),'$(subst ','\'',$(v)=$($(v)))')))

# One explicit rule per paper (make never applies pattern rules to .PHONY targets). Ctrl-C: the run prints one line
# (exit 130) and the recipe ends quietly, so make stops on the interrupt without adding its own "*** Error 130".
# LAUNCHER=slurm (slurm_gpu, local) submits the protocol's seeds as job arrays instead (replications/cluster.py).
define REPLICATE_RULE
replicate-$(1): venv
	@trap 'interrupted=1' INT; $$(PY) -m replications.replicate $(1) $$(NARROW) $$(if $$(LAUNCHER),launcher=$$(LAUNCHER)) \
	$$(CLI_OVERRIDES) $$(ARGS) \
	|| { status=$$$$?; test -n "$$$$interrupted" || exit $$$$status; }
endef
$(foreach p,$(PAPERS),$(eval $(call REPLICATE_RULE,$(p))))

replicate-%:
	@echo "unknown paper '$*'; valid: $(PAPERS)" >&2; exit 2

# A bare `make replicate-` (an empty stem matches no pattern: make's built-in rules said "unknown paper '.o'").
replicate-:
	@echo "name a paper: make replicate-<paper>; valid: $(PAPERS)" >&2; exit 2

# The MoE quality claims across model sizes on the CPU (issue 40): the Tiny Shakespeare ladder's rungs beside the
# protocol's own 4 x d128 (make replicate-<paper> dataset=tinyshakespeare), smallest first, each paper's ladder arms
# (replicate.models_for); resumable seed by seed. Cost per rung: conf/dataset/tinyshakespeare_<layers>x<d>.yaml.
LADDER_RUNGS ?= tinyshakespeare_2x64 tinyshakespeare_6x192
LADDER_PAPERS ?= evomoe ta_moe flexmoe
ladder: venv
	@for d in $(LADDER_RUNGS); do for p in $(LADDER_PAPERS); do \
	echo "$(PY) -m replications.replicate $$p dataset=$$d $(CLI_OVERRIDES)"; \
	$(PY) -m replications.replicate $$p dataset=$$d $(CLI_OVERRIDES) $(ARGS) || exit $$?; done; done

# Re-run a few seeds of a committed result from its stored config and compare: make verify RESULT=results/gaga/tolokers/gaga.json ARGS="--seeds 0"
verify: venv
	$(PY) -m replications.verify $(RESULT) $(ARGS)

report: venv
	$(PY) -m replications.report

# The README's durations come from results/timings.json, not from the last run: this re-measures them from the
# committed records (make readme-times load="alone on the machine"; the load is stated in the file).
readme-times: venv
	$(PY) -m shared.readme_times $(if $(load),--load "$$load")

# Hydra multirun over the grid in conf/sweep/<paper>.yaml (or SWEEP=<name>: conf/sweep/<name>.yaml; override its
# dataset with dataset=..., any key with key=value). shared.sweep_grid first checks every job's config (a bad grid
# value: one line, exit 2, before any job starts) and names the sweep folder; shared.sweep then ranks that folder on
# the paper's validation metric, also after a failed or interrupted multirun (the finished jobs; the failed, diverged
# and never-run ones listed under the ranking), and the target then fails with the multirun's status (issue 38).
SWEEP_OVERRIDES = paper=$* +sweep=$(or $(SWEEP),$*) $(NARROW) $(CLI_OVERRIDES) $(ARGS)
sweep-%: venv
	@dir=$$($(PY) -m shared.sweep_grid $(SWEEP_OVERRIDES)) || exit $$?; trap 'interrupted=1' INT; status=0; \
	$(PY) -m replications --multirun $(SWEEP_OVERRIDES) "hydra.sweep.dir=$$dir" || status=$$?; \
	ranked=0; $(PY) -m shared.sweep "$$dir" || ranked=$$?; \
	if [ $$status -ne 0 ]; then echo "error: the multirun stopped (exit $$status); the ranking above covers the jobs" \
	"that finished in $$dir" >&2; test -n "$$interrupted" || exit $$status; fi; exit $$ranked

# The authors' code at its pinned commit (paper.yaml `official:`), its own venv under the cache, one run per seed:
# make official-gaga dataset=tolokers [seeds=0,1] [jobs=2] -> results/<paper>/<dataset>/official.json (a seeds= subset
# writes outputs/official/ only), the authors_code_run reference of the paper's model; jobs: seeds run at once.
# Offline: OFFICIAL_CODE_DIR=<checkout or bare git dir>.
official-%: venv
	$(PY) -m shared.official $* $(if $(dataset),dataset=$(dataset)) $(if $(seeds),seeds=$(seeds)) $(if $(jobs),jobs=$(jobs))

# Speed and memory benchmarks: replications/<package>/bench.py writes its figures into the committed results/<package>
# (run by hand, a bench writes under outputs/results/); `make report` renders them into the paper's page.
bench-%: venv
	$(PY) -m replications.$*.bench --out results/$* $(ARGS)

# GAGA's grouping (old dense-above-2% path vs the sparse one) over 2.9k-46k nodes at Tolokers' degree, with the fitted
# exponent (results/gaga/bench_grouping.json); run it alone on the machine (~3 min).
bench-gaga-grouping: venv
	$(PY) -m replications.gaga.bench_grouping --out results/gaga $(ARGS)

# Flat vs hierarchical all-to-all on the emulated multi-node cluster (root + ip netns; results/moe/COMM_BENCHMARK.md).
bench-moe-comm: venv
	$(PY) -m replications.moe.bench_comm --out results/moe $(ARGS)

# One GPU window (issue 40): the parts of conf/gpu_check.yaml in plan order within BUDGET_S seconds of work (default
# the plan's 660), each under its own budget, records with the GPU's provenance in OUT (default
# outputs/gpu_check/<run id>). make gpu-check PART=rep runs one part; DEVICE=cpu runs every part at its tiny size.
# make gpu-merge RUN=outputs/gpu_check/<run id> [FORCE=1] brings the finished parts into results/ (shared.merge).
gpu-check: venv
	$(PY) -m shared.gpu_check --device $(or $(DEVICE),cuda) $(if $(PART),--part $(PART)) \
	$(if $(BUDGET_S),--budget-s $(BUDGET_S)) $(if $(OUT),--out $(OUT))

gpu-merge: venv
	@test -n "$(RUN)" || { echo "name the run: make gpu-merge RUN=outputs/gpu_check/<run id>" >&2; exit 2; }
	$(PY) -m shared.gpu_check merge $(RUN) $(if $(FORCE),--force)

# Empties the data cache ($REPLICATIONS_CACHE, default ~/.cache/replications) only when the suite's marker file says
# it is the suite's (shared.cache_marker), and says what it removed. Standard library only: no venv needed.
clean-cache:
	@$(if $(wildcard $(PY)),$(PY),python3) -m shared.cache_marker clean
