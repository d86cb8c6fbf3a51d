"""Build the C extensions. Plain C99 against the CPython API, no system library needed; the bindings
share the glue of backends/binding.h (``backends`` is on their include paths):
* hss_gym.backends._core: the HSS core (page table, LRU, migration queue, scanner) and the simulated
  device model's hot path;
* hss_gym.backends._lqoco: the L-QoCo cache/storage-tier simulator (hss/LQoCo-v0's per-period batches)
  and the env's per-period logic, one env or a batch (the native vector env);
* hss_gym.workloads._fastparse: the trace tokenizer (text readers fall back to NumPy without it);
* hss_gym.backends._flash: the flash SSD model's simulation core (channels, chips, FTL, GC);
* hss_gym.agents._c51: the C51 agents' inference network (sub-microsecond decisions);
* hss_gym.backends._uring: the real-device backend's io_uring engine (Linux only, optional: the
  simulator works without it, and backend="uring" then says why it is unavailable).

And list the packages: the folders ``hss_gym/``, ``agents/``, ``backends/`` and ``benchmarks/``
install as ``hss_gym``, ``hss_gym.agents``, ``hss_gym.backends`` and ``hss_gym.benchmarks``
(setup.cfg ``package_dir``), and every folder below them is a package too, found here - a new
sub-package needs no entry anywhere, and data folders (device profiles, suites) are packages
whose files setup.cfg ``package_data`` names, so setuptools has nothing to warn about. Only
``benchmarks/perf`` (developer scripts run from the repository) is not installed.
"""
import sys

from setuptools import Extension, find_namespace_packages, setup

ROOTS = {"hss_gym": "hss_gym", "hss_gym.agents": "agents", "hss_gym.backends": "backends",
         "hss_gym.benchmarks": "benchmarks"}
NOT_INSTALLED = {"hss_gym.benchmarks.perf"}


def packages() -> list[str]:
    """Every package below the roots (data-only folders included), by dotted name."""
    found = []
    for name, folder in ROOTS.items():
        found.append(name)
        found += [f"{name}.{sub}" for sub in find_namespace_packages(folder, exclude=["*__pycache__*"])]
    return sorted(p for p in found if all(part.isidentifier() for part in p.split("."))
                  and not any(p == x or p.startswith(x + ".") for x in NOT_INSTALLED))


core = Extension(
    "hss_gym.backends._core",
    sources=["backends/core/module.c", "backends/core/hss.c", "backends/core/hss_pt.c", "backends/core/hss_lru.c",
             "backends/core/hss_move.c", "backends/core/env.c", "backends/core/vec.c", "backends/simdev.c"],
    depends=["backends/binding.h", "backends/core/hss.h", "backends/core/hss_types.h", "backends/core/hss_pt.h",
             "backends/core/hss_lru.h", "backends/core/hss_move.h", "backends/core/env.h", "backends/core/vec.h"],
    include_dirs=["backends/core", "backends"],
    # -pthread: the vector envs step their batch over threads (backends/core/vec.c)
    extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra"] + ([] if sys.platform == "win32" else ["-pthread"]),
    extra_link_args=[] if sys.platform == "win32" else ["-pthread"],
)

lqoco = Extension(
    "hss_gym.backends._lqoco",
    sources=["backends/lqoco/module.c", "backends/lqoco/lqoco_sim.c", "backends/lqoco/lqoco_env.c"],
    depends=["backends/lqoco/lqoco_sim.h", "backends/lqoco/lqoco_env.h", "backends/binding.h"],
    include_dirs=["backends/lqoco", "backends"],
    extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra"],
)

fastparse = Extension(
    "hss_gym.workloads._fastparse",
    sources=["hss_gym/workloads/_fastparse.c"],
    depends=["backends/binding.h"],
    include_dirs=["backends"],
    extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra"],
    optional=True,  # the readers fall back to NumPy (identical results, ~5x slower) without it
)

c51 = Extension(
    "hss_gym.agents._c51",
    sources=["agents/_c51.c", "agents/_c51_credit.c", "agents/_c51_migration.c", "agents/c51_kernel.c",
             "agents/c51_async.c", "agents/page_credit.c"],
    depends=["agents/_c51.h", "agents/c51_kernel.h", "agents/c51_async.h", "agents/page_credit.h",
             "backends/binding.h"],
    include_dirs=["agents", "backends"],
    # -O3 and no FP traps/errno: the trainer's batched loops (exp included) vectorise. No fast-math:
    # results match PyTorch's to float32 rounding.
    extra_compile_args=["-O3", "-fno-trapping-math", "-fno-math-errno", "-std=c99", "-Wall", "-Wextra"]
    + ([] if sys.platform == "win32" else ["-pthread"]),  # gradient steps in a background thread
    extra_link_args=[] if sys.platform == "win32" else ["-pthread"],
)

uring = Extension(
    "hss_gym.backends._uring",
    sources=["backends/uring/module.c", "backends/uring/engine.c"],
    depends=["backends/uring/engine.h", "backends/core/hss.h", "backends/core/hss_types.h", "backends/binding.h"],
    include_dirs=["backends/uring", "backends/core", "backends"],
    extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra"],
    optional=True,  # raw io_uring syscalls: Linux only
)

flash = Extension(
    "hss_gym.backends._flash",
    sources=["backends/flash/module.c", "backends/flash/flash.c", "backends/flash/cache.c", "backends/flash/ftl.c",
             "backends/flash/precondition.c"],
    depends=["backends/flash/flash.h", "backends/flash/model.h", "backends/flash/cache.h", "backends/flash/ftl.h",
             "backends/binding.h"],
    include_dirs=["backends/flash", "backends"],
    # -O3 (this extension only): 1.2% fewer instructions in the event loop than -O2, the same results
    extra_compile_args=["-O3", "-std=c99", "-Wall", "-Wextra"],
)

setup(packages=packages(),
      ext_modules=[core, lqoco, fastparse, c51, flash] + ([uring] if sys.platform.startswith("linux") else []))
