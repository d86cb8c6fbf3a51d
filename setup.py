"""Build the native HSS core (hss_gym._core): page table, LRU, migration queue and the simulated
device model's hot path. Plain C99 against the CPython API, no system library needed."""
from setuptools import Extension, setup

core = Extension(
    "hss_gym._core",
    sources=["hss_gym/csrc/module.c", "hss_gym/csrc/hss.c", "backends/simdev.c"],
    include_dirs=["hss_gym/csrc", "backends"],
    extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra"],
)

setup(ext_modules=[core])
