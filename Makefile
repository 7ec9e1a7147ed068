# Two commands on a fresh machine (Python 3.11, pip, cargo, rustc):
#   make demo   build everything and train a vocabulary on a default corpus
#   make test   build everything and run every check CI runs
VENV   := .venv
PY     := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: demo test build lint rust-lint py-lint rust-test extras py-test tf5-test bench corpora clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip 'maturin>=1.7,<2'

# maturin develop recompiles only what changed and installs the dev extras once.
# PIP_QUIET: the pip that maturin runs printed a line per requirement already there
# and per extra not asked for ("Ignoring tiktoken: markers 'extra == "bench"' ..."),
# ~140 lines before anything else; its warnings and errors still show (-q quiets cargo).
# The package's bytecode is written here because the editable install imports from
# python/, and where PYTHONDONTWRITEBYTECODE is set every `bpekit` command compiled
# the whole package again (~20 ms of each start).
build: $(PY)
	PIP_QUIET=1 $(VENV)/bin/maturin develop --release --extras dev -q
	$(PY) -m compileall -q python/bpekit

demo: build
	@$(if $(wildcard ../shared/data/corpora),BPEKIT_DEMO_INPUT=../shared/data/corpora) $(VENV)/bin/bpekit demo
	@echo "(bpekit is in $(VENV): 'source $(VENV)/bin/activate' puts it on your PATH, or 'pip install .' puts it in an environment of your own)"

lint: rust-lint py-lint

# The crate's own checks need no build of the package (and use the debug profile,
# whose folder cargo locks apart from the release build's), so `make test` runs them
# beside the build: its last ~2 minutes (the crate with fat LTO, one codegen unit)
# use one core.
rust-lint: $(PY)
	cargo fmt --check
	$(PY) scripts/check_layers.py
	$(PY) scripts/check_py_layers.py
	cargo clippy --all-targets -q -- -D warnings
	cargo clippy --all-targets --features python -q -- -D warnings

py-lint: build
	$(VENV)/bin/ruff check python tests benchmarks scripts
	$(VENV)/bin/ruff format --check python tests benchmarks scripts
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest bpekit._core

# --lib: the library's tests alone. A plain `cargo test` also built the library a
# second time to link the profiling harnesses of tools/ (52 s more on 2 cores, which
# clippy --all-targets already checks) and ran no doctest (the crate has none).
rust-test:
	cargo test -q --lib

# Two processes, a test file each at a time: in one process the suite's CPU time
# (~690 s) was ~1.3x its wall time (~520 s) on 2 cores, so a core sat idle a quarter
# of the time. Whole files keep each module's fixtures (tokenizers, a Ray) made once.
py-test: build
	scripts/ensure_chromium.sh
	$(PY) -m pytest -n 2 --dist loadfile

# transformers 5 wants a newer regex and huggingface-hub than the dev extras pin (they
# keep transformers 4), so the transformers tests run again in a venv of their own,
# on the same built package (~60 s to make once, ~30 s to run).
TF5 := .venv-tf5
$(TF5)/bin/python:
	python3 -m venv $(TF5)
	$(TF5)/bin/python -m pip install -q 'transformers>=5,<6' pytest hypothesis numpy jinja2 sentencepiece protobuf

# The SentencePiece-style files are built by transformers 4's converters (the main
# venv's), which 5 no longer has, and read there by 5.
tf5-test: build $(TF5)/bin/python
	rm -rf target/sp-models && $(PY) tests/_sp_models.py target/sp-models > /dev/null
	BPEKIT_SP_MODELS=target/sp-models PYTHONPATH=python $(TF5)/bin/python -m pytest tests/transformers -q -p no:cacheprovider -o addopts=""

# What the tests need from outside, Chromium (apt-get) and the transformers 5 venv
# (PyPI), is fetched while the Python lints run: mostly waiting on the network (~30 s
# and ~60 s), which then costs the checks nothing.
extras: $(TF5)/bin/python
	scripts/ensure_chromium.sh

test:
	$(MAKE) -j2 build rust-lint rust-test
	$(MAKE) -j2 py-lint extras
	$(MAKE) py-test
	$(MAKE) tf5-test

# The benchmark corpora, from $BPEKIT_DATA (default ../shared/data) into $BPEKIT_BENCH_DIR
# (default /tmp/bpekit_bench).
corpora: $(PY)
	$(PY) benchmarks/corpora.py

# Every workload of benchmarks/README.md (~30 minutes on 2 cores), then the page itself.
# The peers go into .venv only, never into the package's dependencies.
bench: build corpora
	$(PY) -m pip install -q tiktoken tokenizers rustbpe gigatoken sentencepiece fastokens==0.3.5 tokie kitoken
	$(PY) benchmarks/train_compare.py --corpus ts --vocab-size 10000
	$(PY) benchmarks/train_compare.py --corpus en-small --vocab-size 32000
	$(PY) benchmarks/train_compare.py --count --corpus en --vocab-size 32000
	$(PY) benchmarks/encode_compare.py
	$(PY) benchmarks/pretokenize_compare.py
	$(PY) benchmarks/formats_compare.py
	$(PY) benchmarks/hf_compare.py
	$(PY) benchmarks/offsets_compare.py
	$(PY) benchmarks/peers_compare.py --tokenizers olmo2 neox gpt2-hub
	$(PY) benchmarks/peers_compare.py --tokenizers sp-llama --corpora en-small --workloads doc batch --threads 1 --slow-max-mb 20
	$(PY) benchmarks/report.py

clean:
	rm -rf target $(VENV) $(TF5) python/bpekit/_core*.so
