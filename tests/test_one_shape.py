"""One shape for the four problems: ``make_env(policy, config, workload, **options)`` builds the env
of any problem's policy and ``run_episode(policy, env, seed)`` plays it, bare or as the versioned
modules return it (PettingZoo's AEC form in ``OrderEnforcingWrapper``, Gymnasium's
``OrderEnforcing``), with the episodes of each problem's own loop on the bare env; a policy and
an env of different problems are refused with both named."""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest
from pettingzoo import AECEnv

from hss_gym import fleetio_v0, fleetio_v1, hss_v0, lqoco_v0, rlalloc_v0
from hss_gym.agents import fleetio, lqoco, make_env, make_policy, rlalloc, run_episode
from hss_gym.agents.base import run_hss_episode
from hss_gym.agents.problems import PROBLEMS, problem_of
from hss_gym.envs.fleetio.env import FleetIOEnv
from hss_gym.envs.hss.env import HSSParallelEnv
from hss_gym.envs.lqoco.env import LQoCoEnv
from hss_gym.envs.rlalloc.env import RLAllocEnv


def _metrics(result: Any) -> str:
    """An episode's metrics as exact text (HSS: a RunMetrics; the others: a dict)."""
    m = result.metrics
    return json.dumps(m.to_dict() if hasattr(m, "to_dict") else m, sort_keys=True)


#: Per problem: a policy, the (config, workload, options) of a short episode, the env class
#: make_env must give, and that episode built and played the way each problem did on its own.
CASES: dict[str, tuple[str, tuple[Any, Any, dict[str, Any]], type, Callable[[Any], Any]]] = {
    "hss": ("slow_only", ("perf_opt", "ycsb-b", {"n_requests": 300}), HSSParallelEnv,
            lambda p: run_hss_episode(p, HSSParallelEnv("perf_opt", "ycsb-b", n_requests=300, **p.env_options), 3)),
    "fleetio": ("fleetio/software_isolation", ("fleetio", "mix1", {"windows": 2}), FleetIOEnv,
                lambda p: fleetio.run_episode(p, fleetio.make_env(p, "mix1", windows=2), 3)),
    "rlalloc": ("rlalloc/dynamic", ("rlalloc", "stg0-x4", {"episode_periods": 5}), RLAllocEnv,
                lambda p: rlalloc.run_episode(p, RLAllocEnv(n_streams=4, episode_periods=5), 3)),
    "lqoco": ("lqoco/coto", ("linux", "S-2", {"periods": 5}), LQoCoEnv,
              lambda p: lqoco.run_episode(p, LQoCoEnv(config="linux", workload="S-2", periods=5), 3)),
}

#: Per problem: the env its versioned module returns (wrapped), for the episode of CASES.
VERSIONED: dict[str, Callable[[], Any]] = {
    "hss": lambda: hss_v0.env(config="perf_opt", workload="ycsb-b", n_requests=300, migration=False),
    "fleetio": lambda: fleetio_v1.env(mix="mix1", windows=2, isolation="software"),
    "rlalloc": lambda: rlalloc_v0.env(n_streams=4, episode_periods=5),
    "lqoco": lambda: lqoco_v0.env(config="linux", workload="S-2", periods=5),
}


def test_every_problem_is_registered_with_its_policies_and_env():
    assert list(PROBLEMS) == list(CASES)
    for name, (spec, _, env_class, _) in CASES.items():
        assert problem_of(make_policy(spec)).name == name
        assert PROBLEMS[name].env_type() is env_class


@pytest.mark.parametrize("problem", list(CASES))
def test_make_env_builds_the_env_of_any_problems_policy(problem: str):
    spec, (config, workload, options), env_class, alone = CASES[problem]
    policy = make_policy(spec)
    env = make_env(policy, config, workload, **options)
    assert type(env) is env_class
    assert _metrics(run_episode(policy, env, seed=3)) == _metrics(alone(make_policy(spec)))


@pytest.mark.parametrize("problem", list(CASES))
def test_run_episode_plays_the_wrapped_env_of_the_versioned_module(problem: str):
    spec, _, env_class, alone = CASES[problem]
    env = VERSIONED[problem]()
    assert type(env) is not env_class and isinstance(env.unwrapped, env_class)
    assert _metrics(run_episode(make_policy(spec), env, seed=3)) == _metrics(alone(make_policy(spec)))


def test_run_episode_plays_the_unordered_aec_env_and_fleetio_v0():
    """``raw_env()`` (the AEC form without OrderEnforcingWrapper) and another version's module."""
    policy = make_policy("slow_only")
    assert _metrics(run_episode(policy, hss_v0.raw_env(n_requests=300, migration=False), seed=3)) == \
        _metrics(CASES["hss"][3](make_policy("slow_only")))
    fio = make_policy("fleetio/software_isolation")
    a = run_episode(fio, fleetio_v0.env(mix="mix1", windows=2, isolation="software"), seed=3)
    b = run_episode(fio, make_env(fio, "fleetio-v0", "mix1", windows=2), seed=3)
    assert _metrics(a) == _metrics(b) != _metrics(CASES["fleetio"][3](fio))  # v0's SSD differs


@pytest.mark.parametrize("problem", list(CASES))
def test_run_episode_refuses_another_problems_env_naming_both(problem: str):
    spec = CASES[problem][0]
    other = next(p for p in CASES if p != problem)
    env = VERSIONED[other]()
    with pytest.raises(TypeError, match=f"is a policy of the {PROBLEMS[problem].title} problem: it plays "
                                        f"{PROBLEMS[problem].env_id}.*an env of the {PROBLEMS[other].title} "
                                        f"problem.*make_env"):
        run_episode(make_policy(spec), env, seed=0)


def test_run_episode_says_what_is_wrong_with_what_is_no_policy_or_no_env():
    with pytest.raises(TypeError, match="a dict, the env of no problem"):
        run_episode(make_policy("rlalloc/static"), {}, seed=0)
    with pytest.raises(TypeError, match="not a policy of any problem.*the policy comes first"):
        run_episode(rlalloc_v0.env(), make_policy("rlalloc/static"), seed=0)
    with pytest.raises(TypeError, match="str is not a policy of any problem"):
        make_env("harmonia")

    class TurnBased(AECEnv):
        """An AEC env of its own, not made from a parallel env."""

    with pytest.raises(TypeError, match="TurnBased is an AEC env not made from a parallel env"):
        run_episode(make_policy("slow_only"), TurnBased(), seed=0)


def test_make_env_applies_each_problems_options_and_names():
    # HSS: the caller's options win over the policy's
    assert make_env(make_policy("slow_only"), n_requests=10, migration=True).migration_enabled
    # FleetIO: the policy's sharing scheme wins; the config is the flash profile
    env = make_env(make_policy("fleetio/hardware_isolation"), "fleetio-v0", "mix1", isolation="software")
    assert env.isolation == "hardware" and env.model.prof.name == "fleetio-v0"
    with pytest.raises(ValueError, match="flash profile: give it as config or as profile=, not both"):
        make_env(make_policy("fleetio/adaptive"), "fleetio", "mix1", profile="fleetio-v0")
    # RLAlloc: the suites' workload names
    assert make_env(make_policy("rlalloc/static")).n_streams == 8
    assert make_env(make_policy("rlalloc/static"), workload="stg0-x3").streams == ["STG_0"] * 3
    with pytest.raises(ValueError, match="unknown RLAlloc workload 'stg0-x40'"):
        make_env(make_policy("rlalloc/static"), "rlalloc", "stg0-x40")
    # L-QoCo: the policy's env options win (bypass's threshold)
    env = make_env(make_policy("lqoco/bypass"), "linux", "S-1", bypass_us=None)
    assert env.bypass_us == make_policy("lqoco/bypass").env_options["bypass_us"]


@pytest.mark.parametrize("spec", ["fit_first", "harmonia"])
def test_a_parallel_wrapper_is_stepped_in_the_generic_loop_with_the_same_episode(spec: str):
    """A wrapper's step must run, so an HSS policy's own loop (``run_fast``) runs only on the bare
    env; the generic loop plays the same episode."""
    from pettingzoo.utils.wrappers import BaseParallelWrapper

    def play(wrap: bool) -> str:
        policy = make_policy(spec, seed=1)
        env = make_env(policy, "perf_opt", "ycsb-b", n_requests=400)
        return _metrics(run_episode(policy, BaseParallelWrapper(env) if wrap else env, seed=3))

    assert play(True) == play(False)
