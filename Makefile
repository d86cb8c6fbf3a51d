# hss-gym developer entry points. `make run` and `make test` set everything up on a fresh clone:
# a virtualenv in .venv with the package installed in editable mode (C core built in place).
# Set PIP_CONSTRAINT (pip reads it) to pin packages, as .ci/run does for torch; VENV and EXTRAS
# choose the virtualenv and the extras `make test` installs in it (.ci/run tests two), RUN_EXTRAS
# those `make run` installs; PIP_FLAGS=-v shows what pip does (the default prints errors only,
# and each step says what it does).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS ?= test,agents
# `make run` needs no PyTorch: only 3 of the quick suite's 19 policies do (Archivist, RNN-HSS,
# Sibyl+RNN-HSS), left out with a line saying so. `lite` is scikit-learn (K-SVM) and matplotlib
# (the report's figures); RUN_EXTRAS=agents adds PyTorch (docs/install.md: sizes and times).
RUN_EXTRAS ?= lite
PIP_FLAGS ?= -qq --progress-bar off
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
HSS_C := backends/core/hss.c backends/core/hss_pt.c backends/core/hss_lru.c backends/core/hss_move.c
CSRC := $(wildcard backends/core/*.c backends/core/*.h backends/lqoco/*.c backends/lqoco/*.h backends/*.c backends/*.h hss_gym/workloads/*.c agents/*.c agents/*.h backends/flash/*.c backends/flash/*.h)
SO_STAMP := build/.core-built
RESULTS ?= results
say = @echo "[make $$(date +%H:%M:%S)] $(1)"

.PHONY: run test test-py test-slow test-asan bench-perf clean

$(STAMP): pyproject.toml setup.cfg setup.py
	$(call say,setting up $(VENV) with hss-gym[$(EXTRAS)] - the first time takes minutes (PIP_FLAGS=-v shows pip's output))
	@test -x $(PY) || { echo "  creating the virtualenv: $(PYTHON) -m venv $(VENV)"; $(PYTHON) -m venv $(VENV); }
	@echo "  upgrading pip and setuptools in it"
	@$(PY) -m pip install $(PIP_FLAGS) --upgrade pip 'setuptools>=77'
	@echo "  installing hss-gym in editable mode with its dependencies and the extras $(EXTRAS), and building its C extensions"
	@$(PY) -m pip install $(PIP_FLAGS) -e '.[$(EXTRAS)]'
	@mkdir -p build && touch $@ $(SO_STAMP)
	$(call say,$(VENV) is ready: source $(VENV)/bin/activate (or call $(VENV)/bin/hss-gym$(comma) $(VENV)/bin/python) for the hss-gym command and the package)

# Rebuild the C core in place when its sources change (editable installs do not).
$(SO_STAMP): $(STAMP) $(CSRC)
	$(call say,building the C extensions in place (log: build/build_ext.log))
	@mkdir -p build
	@$(PY) setup.py -q build_ext --inplace > build/build_ext.log 2>&1 || { cat build/build_ext.log; exit 1; }
	@touch $@

## The main job: the `quick` leaderboard suite (reference agents and baselines), table + report.
## Set up with RUN_EXTRAS (a venv that `make test` set up already has them all).
run:
	@$(MAKE) --no-print-directory $(SO_STAMP) EXTRAS=$(RUN_EXTRAS)
	@$(PY) -c 'import torch' 2>/dev/null || echo "[make] no PyTorch in $(VENV): the 3 policies that need it are left out; make run RUN_EXTRAS=agents installs it (docs/install.md)"
	$(call say,running the quick suite: $(VENV)/bin/hss-gym bench --suite quick --out $(RESULTS)/quick --resume)
	@$(VENV)/bin/hss-gym bench --suite quick --out $(RESULTS)/quick --resume
	$(call say,done: $(RESULTS)/quick/report.md and report.html)

## The fast test suite (< 8 min on 2 cores), plus the C core under ASan/UBSan.
test: test-py test-asan

## The fast test suite alone.
test-py: $(SO_STAMP)
	$(PY) -m pytest -q

## The training-heavy tests, in two processes side by side (one per core; about 5.5 min in one).
## The first holds the tests that start Ray, build packages or MQSim, so those never overlap.
SLOW_A := tests/test_examples.py tests/test_harness.py tests/test_packaging.py tests/test_fleetio.py \
	tests/test_flash_mqsim.py tests/test_report_browser.py
test-slow: $(SO_STAMP)
	@mkdir -p build
	@$(PY) -m pytest -q -m slow $(SLOW_A) > build/test-slow-a.log 2>&1 & a=$$!; \
	$(PY) -m pytest -q -m slow $(addprefix --ignore=,$(SLOW_A)); rb=$$?; \
	wait $$a; ra=$$?; echo "--- $(SLOW_A):"; cat build/test-slow-a.log; \
	test $$ra -eq 0 && test $$rb -eq 0

## The C code under AddressSanitizer + UBSan: the core (page table, LRU, migration queue, device
## model), the env (features, one env's step), the batched env step of the vector envs, the
## real-device engine, the C51 agents' kernel, the flash SSD model and the L-QoCo simulator and env.
test-asan: build/test_core_asan build/test_env_asan build/test_vec_asan build/test_uring_asan build/test_c51_asan build/test_flash_asan build/test_lqoco_asan
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 ./build/test_core_asan
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 ./build/test_env_asan
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 ./build/test_vec_asan
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 ./build/test_uring_asan
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 ./build/test_c51_asan
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 ./build/test_flash_asan
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 ./build/test_lqoco_asan

build/test_core_asan: tests/c/test_core.c $(CSRC)
	mkdir -p build
	$(CC) -std=c99 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-omit-frame-pointer \
	  -Ibackends/core -Ibackends tests/c/test_core.c $(HSS_C) backends/simdev.c -lm -o $@

# The env: the feature table, the features, one env's step (latencies, stays, the FIFO of moves).
build/test_env_asan: tests/c/test_env.c $(CSRC)
	mkdir -p build
	$(CC) -std=c99 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-omit-frame-pointer \
	  -Ibackends/core -Ibackends tests/c/test_env.c backends/core/env.c $(HSS_C) backends/simdev.c -lm -o $@

# The batched env step (vector envs): three modes, one thread against three, autoresets.
build/test_vec_asan: tests/c/test_vec.c $(CSRC)
	mkdir -p build
	$(CC) -std=c99 -O1 -g -Wall -Wextra -Werror -pthread -fsanitize=address,undefined -fno-omit-frame-pointer \
	  -Ibackends/core -Ibackends tests/c/test_vec.c backends/core/vec.c backends/core/env.c $(HSS_C) \
	  backends/simdev.c -lm -o $@

# The real-device engine (io_uring + psync) driven by the core's I/O log; Linux only.
build/test_uring_asan: tests/c/test_uring.c backends/uring/engine.c backends/uring/engine.h $(CSRC)
	mkdir -p build
	$(CC) -std=c99 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-omit-frame-pointer \
	  -Ibackends/core -Ibackends -Ibackends/uring tests/c/test_uring.c backends/uring/engine.c \
	  $(HSS_C) backends/simdev.c -lm -o $@

# The C51 kernel (forward, gradients, Adam) and the per-page credit table of the reference agents.
build/test_c51_asan: tests/c/test_c51.c agents/c51_kernel.c agents/c51_kernel.h agents/c51_async.c agents/c51_async.h \
                     agents/page_credit.c agents/page_credit.h
	mkdir -p build
	$(CC) -std=c99 -O1 -g -Wall -Wextra -Werror -fno-trapping-math -fno-math-errno -pthread \
	  -fsanitize=address,undefined -fno-omit-frame-pointer -Iagents tests/c/test_c51.c agents/c51_kernel.c \
	  agents/c51_async.c agents/page_credit.c -lm -o $@

# The flash SSD model's core (channels, chips, FTL, GC).
FLASH_C := backends/flash/flash.c backends/flash/cache.c backends/flash/ftl.c backends/flash/precondition.c
build/test_flash_asan: tests/c/test_flash.c $(FLASH_C) backends/flash/flash.h backends/flash/model.h backends/flash/cache.h backends/flash/ftl.h
	mkdir -p build
	$(CC) -std=c99 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-omit-frame-pointer \
	  -Ibackends/flash tests/c/test_flash.c $(FLASH_C) -lm -o $@

# The L-QoCo cache/storage-tier simulator and the env's per-period logic (one env, a batch).
LQOCO_C := backends/lqoco/lqoco_sim.c backends/lqoco/lqoco_env.c
build/test_lqoco_asan: tests/c/test_lqoco.c $(LQOCO_C) backends/lqoco/lqoco_sim.h backends/lqoco/lqoco_env.h
	mkdir -p build
	$(CC) -std=c99 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-omit-frame-pointer \
	  -Ibackends/lqoco tests/c/test_lqoco.c $(LQOCO_C) -lm -o $@

## Performance benchmarks (results are quoted in the README).
bench-perf: $(SO_STAMP)
	$(PY) benchmarks/perf/bench_replay.py
	$(PY) benchmarks/perf/bench_trace_parse.py
	$(PY) benchmarks/perf/bench_env_step.py
	$(PY) benchmarks/perf/bench_vector_env.py
	$(PY) benchmarks/perf/bench_memory.py
	$(PY) benchmarks/perf/bench_agents.py
	$(PY) benchmarks/perf/bench_baselines.py
	$(PY) benchmarks/perf/bench_lqoco.py
	$(PY) benchmarks/perf/bench_model_policy.py  # needs the sb3 extra
	$(PY) benchmarks/perf/bench_uring.py  # skips without fio or io_uring
	$(PY) benchmarks/perf/bench_flash.py  # MQSim side by side: skips the speed part without ../shared/anchors/MQSim

clean:
	rm -rf build $(VENV) hss_gym/*.so hss_gym/workloads/*.so agents/*.so backends/*.so *.egg-info
