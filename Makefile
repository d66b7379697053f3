# The two commands: `make demo` and `make test`. Both create .venv on a fresh machine and build the
# native core (native/, Rust via maturin) into it when cargo exists; without cargo moddesk runs on
# its pure-Python reference core (MODDESK_CORE=python) and says so in `moddesk doctor`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CARGO := $(shell command -v cargo 2>/dev/null)
CARGO_FLAGS := --manifest-path native/Cargo.toml
NATIVE_SOURCES := $(shell find native -path native/target -prune -o -type f \( -name '*.rs' -o -name '*.toml' -o -name 'Cargo.lock' \) -print 2>/dev/null)
NATIVE_STAMP := $(VENV)/.native-installed
WHEELS := native/target/wheels
#: the core-sensitive pvf tests, run on both cores by `make test`
PVF_CORE_TESTS := tests/pvf/format tests/pvf/test_archive_basics.py tests/pvf/test_archive_detection.py \
	tests/pvf/test_archive_edits_property.py tests/pvf/test_save.py

.PHONY: demo test lint bench venv native wheel-check clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,dev]'
	touch $(STAMP)

venv: $(STAMP)

# the Linux wheel (abi3, CPython >= 3.11) built by maturin and installed into .venv
$(NATIVE_STAMP): $(STAMP) $(NATIVE_SOURCES)
ifdef CARGO
	rm -f $(WHEELS)/moddesk_native-*.whl
	cd native && ../$(BIN)/maturin build --release --quiet -o target/wheels
	$(BIN)/python -m pip install --quiet --force-reinstall --no-deps $(WHEELS)/moddesk_native-*.whl
	touch $(NATIVE_STAMP)
else
	@echo "cargo not found: the native core is not built; moddesk uses its pure-Python core"
endif

native: $(NATIVE_STAMP)

demo: $(NATIVE_STAMP)
	$(BIN)/moddesk demo

lint: $(STAMP)
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy
ifdef CARGO
	cargo fmt $(CARGO_FLAGS) --all --check
	cargo clippy $(CARGO_FLAGS) --workspace --all-targets --quiet -- -D warnings
endif

test: lint $(NATIVE_STAMP)
ifdef CARGO
	cargo test $(CARGO_FLAGS) --workspace --exclude moddesk-native --release --quiet
endif
	$(BIN)/python -m pytest -q -p no:cacheprovider; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$rc
# the suite above ran on the native core (auto); the pvf container and format tests run again on the
# Python reference, which must keep working on its own (test_native_core.py compares both in-process)
ifdef CARGO
	MODDESK_CORE=python $(BIN)/python -m pytest -q -p no:cacheprovider $(PVF_CORE_TESTS)
endif

# CI: the wheel installed into a fresh venv beside a plain moddesk install runs the whole demo
wheel-check: $(NATIVE_STAMP)
	rm -rf build/wheel-venv
	$(PY) -m venv build/wheel-venv
	build/wheel-venv/bin/python -m pip install --quiet '.[all]' $(WHEELS)/moddesk_native-*.whl
	cd build && MODDESK_CORE=native wheel-venv/bin/moddesk doctor
	cd build && MODDESK_CORE=native wheel-venv/bin/moddesk demo

bench: $(NATIVE_STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build src/*.egg-info native/target
