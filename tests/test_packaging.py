"""What `pip install hss-gym` gives a user: the sdist as PyPI would serve it, built into a wheel
and installed outside the checkout, with every C extension, every data file (device and flash
profiles, suites, published numbers, shipped weights) and working environments - not the
editable install the other tests use. Slow: it compiles every extension (about a minute). With
twine installed it also runs PyPI's metadata check (``twine check --strict``) on both files. A fast
test checks that the committed wheel workflow (cibuildwheel) matches the package."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


# Run by the installed copy, from a folder outside the checkout.
CHECK = r"""
import importlib, sys
from pathlib import Path

target = Path(sys.argv[1]).resolve()
import hss_gym, hss_gym.agents, hss_gym.backends, hss_gym.benchmarks
for mod in (hss_gym, hss_gym.agents, hss_gym.backends, hss_gym.benchmarks):
    assert Path(mod.__file__).resolve().is_relative_to(target), (mod.__name__, mod.__file__)
for ext in ("hss_gym.backends._core", "hss_gym.backends._lqoco", "hss_gym.workloads._fastparse", "hss_gym.agents._c51",
            "hss_gym.backends._flash", "hss_gym.backends._uring"):
    assert Path(importlib.import_module(ext).__file__).resolve().is_relative_to(target), ext

from hss_gym import fleetio_v1, lqoco_v0, rlalloc_v0
from hss_gym.agents import make_env, make_policy, run_episode
from hss_gym.agents.pretrain import shipped_weights
from hss_gym.backends.flash import load_profile as flash_profile
from hss_gym.backends.sim import load_profile
from hss_gym.benchmarks.suites import list_suites, load_suite

assert {"quick", "fleetio-v1", "rlalloc-v1", "lqoco-v1", "learning-v1"} <= set(list_suites())
for suite in set(list_suites()) - {"real"}:  # "real" runs a folder of the user's traces
    load_suite(suite)
flash_profile("mqsim-default")
load_profile("H")
h = make_policy("harmonia_paper", weights=shipped_weights("harmonia_paper", "perf_opt"))
res = run_episode(h, make_env(h, "perf_opt", "ycsb-b", n_requests=3000), seed=0)
assert res.steps == 3000 and res.metrics.mean_latency_us > 0
env = fleetio_v1.parallel_env()
obs, _ = env.reset(seed=0)
assert len(obs) >= 2
for mod in (rlalloc_v0, lqoco_v0):
    e = mod.env()
    e.reset(seed=0)
    e.step(e.action_space.sample())
print("installed copy OK")
"""


@pytest.mark.slow
def test_sdist_builds_a_wheel_that_works_outside_the_checkout(tmp_path: Path) -> None:
    from setuptools import build_meta

    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        sdist = tmp_path / build_meta.build_sdist(str(tmp_path))
    finally:
        os.chdir(cwd)
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path / "src", **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    (src,) = (tmp_path / "src").iterdir()
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "wheel"), str(src)],
                   check=True, cwd=tmp_path)
    (wheel,) = (tmp_path / "wheel").glob("hss_gym-*.whl")
    if importlib.util.find_spec("twine") is not None:  # PyPI's metadata check (pip install twine)
        chk = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)],
                             capture_output=True, text=True)
        assert chk.returncode == 0, chk.stdout + chk.stderr
    target = tmp_path / "site"
    subprocess.run(pip + ["install", "--no-deps", "--target", str(target), str(wheel)], check=True, cwd=tmp_path)
    assert not any(p.name in ("agents", "backends", "benchmarks") for p in target.iterdir())
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run([sys.executable, "-c", CHECK, str(target)], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "installed copy OK" in out.stdout


def test_wheel_workflow_matches_the_package() -> None:
    """The committed cibuildwheel workflow builds Linux and macOS wheels for every CPython that
    requires-python admits (3.10 up to the newest tested, 3.13) and smoke-tests each wheel."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    cibw = meta["tool"]["cibuildwheel"]
    assert meta["project"]["requires-python"] == ">=3.10"
    assert cibw["build"].split() == [f"cp3{v}-*" for v in range(10, 14)]
    assert "hss_gym.backends._core" in cibw["test-command"] and "gym.make" in cibw["test-command"]
    flow = (REPO / ".github" / "workflows" / "wheels.yml").read_text()
    assert "pypa/cibuildwheel@" in flow and "twine check" in flow
    assert "ubuntu-" in flow and "macos-" in flow


def test_version_module_matches_pyproject() -> None:
    """hss_gym._version.__version__ (what provenance records) is pyproject.toml's version (what
    packaging reads), and the package hands it on as hss_gym.__version__."""
    import re

    import hss_gym
    from hss_gym._version import __version__
    found = re.search(r'^version\s*=\s*"([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert found and found.group(1) == __version__ == hss_gym.__version__
