"""The versioned modules are alike, as PettingZoo's (``pistonball_v6``): ``hss_v0``, ``fleetio_v1``
(and ``fleetio_v0``, kept for its episodes), ``rlalloc_v0`` and ``lqoco_v0`` export ``env`` and ``raw_env`` (plus ``parallel_env`` for the
multi-agent problems), and each documents its env under Gymnasium's ``cartpole.py`` headings."""

from __future__ import annotations

import importlib
import re
import warnings

import gymnasium as gym
import pytest
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

import hss_gym

MODULES = ("hss_v0", "fleetio_v1", "fleetio_v0", "rlalloc_v0", "lqoco_v0")
MULTI_AGENT = ("hss_v0", "fleetio_v1", "fleetio_v0")
HEADINGS = ("Description", "Action Space", "Observation Space", "Rewards", "Starting State", "Episode End",
            "Arguments", "Version History")
#: small, fast arguments per module
SMALL = {"hss_v0": {"n_requests": 300}, "fleetio_v1": {"mix": "mix1", "windows": 3},
         "fleetio_v0": {"mix": "mix1", "windows": 3},
         "rlalloc_v0": {"episode_periods": 3, "scale": 1 / 64}, "lqoco_v0": {"periods": 3}}


def module(name: str):
    return importlib.import_module(f"hss_gym.{name}")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PettingZoo's api tests pass unknown reset options
        yield


@pytest.mark.parametrize("name", MODULES)
def test_same_core_names(name: str) -> None:
    mod = module(name)
    core = ["env", "raw_env"] + (["parallel_env"] if name in MULTI_AGENT else [])
    for attr in core:
        assert callable(getattr(mod, attr, None)), f"{name}.{attr}"
        assert attr in mod.__all__, f"{name}.__all__ lacks {attr}"
    if name not in MULTI_AGENT:
        assert not hasattr(mod, "parallel_env"), f"{name} is single-agent: no parallel_env"


def test_old_names_still_work() -> None:
    from hss_gym import fleetio_v0, lqoco_v0, rlalloc_v0
    from hss_gym.envs import FleetIOEnv, HSSParallelEnv, LQoCoEnv, RLAllocEnv

    assert fleetio_v0.FleetIOEnv is FleetIOEnv and rlalloc_v0.RLAllocEnv is RLAllocEnv
    assert rlalloc_v0.raw_env is RLAllocEnv and lqoco_v0.raw_env is LQoCoEnv
    assert isinstance(hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=100), HSSParallelEnv)
    assert isinstance(fleetio_v0.parallel_env(mix="mix1", windows=1), FleetIOEnv)


def test_a_change_that_alters_episodes_is_a_new_version() -> None:
    """fleetio_v1's SSD suspends programs and erases for reads; fleetio_v0 keeps the SSD
    it had, so its episodes are those it gave before (the profile's hash is that of hss-gym 0.5.2's
    ``fleetio`` profile), and the two differ."""
    from hss_gym import fleetio_v0, fleetio_v1
    v0, v1 = fleetio_v0.parallel_env(mix="mix1", windows=2), fleetio_v1.parallel_env(mix="mix1", windows=2)
    assert (v0.profile.suspension, v1.profile.suspension) == ("none", "program_erase")
    assert v0.metadata["name"] == "fleetio_v1"  # one class; the module pins the device
    import dataclasses
    assert dataclasses.replace(v0.profile, name="fleetio", source="").digest() == \
        dataclasses.replace(v1.profile, suspension="none", source="").digest()  # only suspension differs
    p99 = []
    for env in (v0, v1):
        env.reset(seed=3)
        while env.agents:
            _, _, _, _, infos = env.step({a: env.action_space(a).sample() * 0 for a in env.agents})
        p99.append([i["p99_us"] for i in infos.values()])
    assert p99[0] != p99[1]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_headings_in_order(name: str) -> None:
    doc = module(name).__doc__ or ""
    found = re.findall(r"^## (.+?)\s*$", doc, flags=re.M)
    assert tuple(found) == HEADINGS, f"{name}: headings {found}, expected {list(HEADINGS)}"
    version_history = doc.split("## Version History", 1)[1]
    assert re.search(r"^\* v0\b", version_history, flags=re.M), f"{name}: no v0 entry in the version history"


@pytest.mark.parametrize("name", MULTI_AGENT)
def test_multi_agent_env_is_the_wrapped_aec_form(name: str) -> None:
    mod = module(name)
    assert isinstance(mod.parallel_env(**SMALL[name]), ParallelEnv)
    raw = mod.raw_env(**SMALL[name])
    assert isinstance(raw, AECEnv) and not isinstance(raw, OrderEnforcingWrapper)
    wrapped = mod.env(**SMALL[name])
    assert isinstance(wrapped, OrderEnforcingWrapper)


@pytest.mark.parametrize("name", ["rlalloc_v0", "lqoco_v0"])
def test_single_agent_env_is_gymnasium_make(name: str) -> None:
    mod = module(name)
    e = mod.env(**SMALL[name])
    assert isinstance(e, gym.Wrapper) and isinstance(e.unwrapped, mod.raw_env)
    assert e.spec is not None and e.spec.id.startswith("hss/")
    e.reset(seed=0)
    e.step(e.action_space.sample())
    e.close()


def test_hss_v0_parallel_api() -> None:
    from hss_gym import hss_v0

    parallel_api_test(hss_v0.parallel_env(config="perf_opt", workload="ycsb-b", n_requests=300), num_cycles=300)


@pytest.mark.parametrize("name", MULTI_AGENT)
def test_aec_api(name: str) -> None:
    api_test(module(name).env(**SMALL[name]), num_cycles=20)


def test_hss_v0_is_hss_gym_parallel_env() -> None:
    """``hss_gym.parallel_env`` is kept as the same factory: same episode start."""
    from hss_gym import hss_v0

    a = hss_v0.parallel_env("perf_opt", "ycsb-b", n_requests=200)
    b = hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=200)
    oa, _ = a.reset(seed=3)
    ob, _ = b.reset(seed=3)
    assert type(a) is type(b) and all((oa[k] == ob[k]).all() for k in oa)
    assert a.metadata["name"] == "hss_v0"
