"""A configuration is built once and passed down.

The outermost entry point (a harness job, ``parallel_env``/``gym.make``, ``hss-gym replay``)
resolves a configuration's name into an :class:`HSSConfig` once; the env, the HSS and its
simulated devices take that object as given. Counted here: device-profile loads (one per device,
whatever runs below) and the objects handed down (the same, by identity).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import gymnasium as gym
import pytest

import hss_gym
import hss_gym.benchmarks.problems.hss as hss_problem
import hss_gym.config as config_module
import hss_gym.envs.fleetio.env as fleetio_env
from hss_gym.benchmarks.problems import get_problem
from hss_gym.config import HSSConfig, make_config
from hss_gym.hss import HSS


@pytest.fixture
def profile_loads(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Device-profile loads by ``make_config`` (by spec), counted."""
    loads: Counter = Counter()
    load = config_module.load_profile

    def counting(spec: Any) -> Any:
        loads[spec] += 1
        return load(spec)

    monkeypatch.setattr(config_module, "load_profile", counting)
    return loads


@pytest.fixture
def hss_configs(monkeypatch: pytest.MonkeyPatch) -> list[HSSConfig]:
    """The configuration of every :class:`HSS` built, in order."""
    seen: list[HSSConfig] = []
    init = HSS.__init__

    def recording(self: HSS, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        seen.append(self.config)

    monkeypatch.setattr(HSS, "__init__", recording)
    return seen


def _job(policy: str, config: str = "perf_opt") -> dict[str, Any]:
    return {"suite": "quick", "problem": "hss", "track": config, "workload": "ycsb-b", "config": config,
            "policy": policy, "seed": 0, "n_requests": 300}


@pytest.mark.parametrize("policy", ["hps", "fast_only"])
def test_harness_job_reads_each_profile_once(policy: str, profile_loads: Counter,
                                             hss_configs: list[HSSConfig], monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[HSSConfig] = []  # configurations resolved from a name (not from a config object)

    def recording(spec: Any = "perf_opt", **options: Any) -> HSSConfig:
        cfg = make_config(spec, **options)
        if not isinstance(spec, HSSConfig):
            made.append(cfg)
        return cfg

    monkeypatch.setattr(hss_problem, "make_config", recording)  # the name run_job resolves the job's config with
    out = get_problem("hss").run_job(_job(policy))
    assert dict(profile_loads) == {"H": 1, "M": 1}
    assert len(made) == 1 and out["provenance"]["config_hash"] == made[0].digest()
    (used,) = hss_configs
    if policy == "hps":  # no options: the very object the job resolved
        assert used is made[0]
    else:  # fast_only's options (fast_fraction, preloaded): a copy on the same device profiles
        assert used.preloaded and used.fractions == (1.0,)
    assert all(a is b for a, b in zip(used.devices, made[0].devices))


def test_parallel_env_passes_its_config_down(profile_loads: Counter, hss_configs: list[HSSConfig]) -> None:
    env = hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=300)
    env.reset(seed=0)
    env.reset(seed=1)  # a new seed: a new HSS, on the same configuration
    assert dict(profile_loads) == {"H": 1, "M": 1}
    assert len(hss_configs) == 2 and all(c is env.cfg for c in hss_configs)
    assert all(p is d for p, d in zip(env._hss.backend.profiles, env.cfg.devices))


def test_env_takes_a_resolved_config_as_is(profile_loads: Counter, hss_configs: list[HSSConfig]) -> None:
    cfg = make_config("tri")
    env = hss_gym.parallel_env(cfg, "ycsb-b", n_requests=300)
    env.reset(seed=0)
    assert env.cfg is cfg and hss_configs == [cfg] and hss_configs[0] is cfg
    assert sum(profile_loads.values()) == 3


def test_gym_make_reads_each_profile_once(profile_loads: Counter, hss_configs: list[HSSConfig]) -> None:
    env = gym.make("hss/Migration-v0", config="cost_opt", workload="ycsb-b", n_requests=300, fast_fraction=0.2)
    env.reset(seed=0)
    assert dict(profile_loads) == {"H": 1, "L": 1}
    assert hss_configs == [env.unwrapped.env.cfg] and hss_configs[0] is env.unwrapped.env.cfg
    env.close()


def test_replay_command_resolves_each_config_once(profile_loads: Counter, tmp_path: Any) -> None:
    from hss_gym.cli import main
    assert main(["replay", "--workload", "ycsb-b", "--config", "perf_opt,tri", "--n", "300",
                 "--out", str(tmp_path), "--quiet"]) == 0
    assert dict(profile_loads) == {"H": 2, "M": 2, "L": 1}  # perf_opt: H + M; tri: H + M + L


def test_fleetio_env_reads_its_flash_profile_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from hss_gym import fleetio_v1
    loads: Counter = Counter()
    load = fleetio_env.load_profile

    def counting(spec: Any, scale: float | None = None) -> Any:
        loads[spec] += 1
        return load(spec, scale=scale)

    monkeypatch.setattr(fleetio_env, "load_profile", counting)  # the name the env reads its profile with
    env = fleetio_v1.parallel_env(mix="mix1", windows=1, slo_us=[1000.0, 1000.0])
    env.reset(seed=0)
    env.reset(seed=1)
    assert dict(loads) == {"fleetio": 1}
    assert env.model.prof is env.profile
