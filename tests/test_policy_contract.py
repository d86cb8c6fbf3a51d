"""One front door for the policies of every problem (issue 29): ``make_policy("<problem>/<name>")``
and ``run_episode(policy, env, seed)`` from ``hss_gym.agents``, with the results of each problem's
own loop."""

from __future__ import annotations

import pytest

from hss_gym.agents import list_policies, make_env, make_policy, run_episode
from hss_gym.agents.fleetio import FleetIOPolicy
from hss_gym.agents.heuristics import HPS
from hss_gym.agents.lqoco import ControlPolicy
from hss_gym.agents.rlalloc import AllocPolicy
from hss_gym.envs.fleetio import FleetIOEnv
from hss_gym.envs.lqoco import LQoCoEnv
from hss_gym.envs.rlalloc import RLAllocEnv


def test_list_policies_names_every_problem_as_make_policy_takes_them():
    every = list_policies("all")
    assert list_policies() == list_policies("hss") and "harmonia" in every
    for name in ("fleetio/ssdkeeper", "fleetio/fleetio_ppo", "rlalloc/static", "rlalloc/rlalloc_dqn", "lqoco/coto",
                 "lqoco/lqoco"):
        assert name in every
    with pytest.raises(ValueError, match="unknown problem 'hsss'"):
        list_policies("hsss")


@pytest.mark.parametrize("spec, kind", [("hss/hps", HPS), ("fleetio/hardware_isolation", FleetIOPolicy),
                                        ("rlalloc/static", AllocPolicy), ("lqoco/coto", ControlPolicy)])
def test_make_policy_by_problem(spec: str, kind: type):
    assert isinstance(make_policy(spec, seed=1), kind)


def test_make_policy_says_what_is_wrong():
    with pytest.raises(ValueError, match="unknown problem 'flash'.*valid: hss, fleetio, rlalloc, lqoco"):
        make_policy("flash/greedy")
    with pytest.raises(ValueError, match="unknown L-QoCo policy 'cotoo'.*did you mean 'coto'"):
        make_policy("lqoco/cotoo")
    with pytest.raises(ValueError, match="unknown FleetIO policy"):
        make_policy("fleetio/harmonia")
    with pytest.raises(ValueError, match="unknown policy 'harmonai'"):
        make_policy("hss/harmonai")


def test_run_episode_plays_every_problem_with_its_own_loop():
    from hss_gym.agents import fleetio, lqoco, rlalloc

    hss = make_policy("slow_only")
    r = run_episode(hss, make_env(hss, "perf_opt", "ycsb-b", n_requests=300), seed=2)
    assert r.steps == 300 and r.metrics.requests == 300

    fio = make_policy("fleetio/software_isolation")
    a = run_episode(fio, fleetio.make_env(fio, "mix1", windows=2), seed=3)
    b = fleetio.run_episode(fio, fleetio.make_env(fio, "mix1", windows=2), seed=3)
    assert a.metrics == b.metrics and a.steps == 2 and len(a.curves["mean_reward"]) == 2

    alloc = make_policy("rlalloc/dynamic")
    a = run_episode(alloc, RLAllocEnv(episode_periods=5), seed=4)
    b = rlalloc.run_episode(make_policy("rlalloc/dynamic"), RLAllocEnv(episode_periods=5), seed=4)
    assert a.metrics == b.metrics and a.steps == 5 and a.metrics["iops"] > 0

    ctl = make_policy("lqoco/coto")
    a = run_episode(ctl, LQoCoEnv(periods=5), seed=5)
    b = lqoco.run_episode(make_policy("lqoco/coto"), LQoCoEnv(periods=5), seed=5)
    assert a.metrics == b.metrics and a.steps == 5


def test_run_episode_refuses_an_env_built_without_the_policys_scheme():
    """A FleetIO baseline is a sharing scheme of the env: an env built without it would be measured
    under the policy's name."""
    with pytest.raises(ValueError, match="isolation='hardware'.*make_env"):
        run_episode(make_policy("fleetio/hardware_isolation"), FleetIOEnv("mix1", windows=2), seed=0)
    with pytest.raises(TypeError, match="not a policy of any problem"):
        run_episode(object(), FleetIOEnv("mix1", windows=2), seed=0)


def test_a_policy_whose_extra_is_missing_says_which_extra(tmp_path, monkeypatch):
    """On the core install (no PyTorch), make_policy names the extra that brings what is missing."""
    (tmp_path / "needs_torch_mod.py").write_text("import torch\n\ndef factory():\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(__import__("sys").modules, "torch", None)  # import torch now fails
    with pytest.raises(ValueError, match=r"cannot import module 'torch'.*pip install 'hss-gym\[agents\]'"):
        make_policy("needs_torch_mod:factory")
