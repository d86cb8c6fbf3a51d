"""Build the C extensions. Plain C99 against the CPython API, no system library needed:
* hss_gym._core: the HSS core (page table, LRU, migration queue, scanner) and the simulated
  device model's hot path;
* hss_gym.workloads._fastparse: the trace tokenizer (text readers fall back to NumPy without it).
"""
from setuptools import Extension, setup

core = Extension(
    "hss_gym._core",
    sources=["hss_gym/csrc/module.c", "hss_gym/csrc/hss.c", "backends/simdev.c"],
    include_dirs=["hss_gym/csrc", "backends"],
    extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra"],
)

fastparse = Extension(
    "hss_gym.workloads._fastparse",
    sources=["hss_gym/workloads/_fastparse.c"],
    extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra"],
    optional=True,  # the readers fall back to NumPy (identical results, ~5x slower) without it
)

setup(ext_modules=[core, fastparse])
