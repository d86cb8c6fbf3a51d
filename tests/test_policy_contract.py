"""One front door for the policies of every problem: ``make_policy("<problem>/<name>")``
and ``run_episode(policy, env, seed)`` from ``hss_gym.agents``, with the results of each problem's
own loop; one protocol (``BasePolicy``: ``reset``, ``act``, ``observe``) that every policy follows
and every problem's loop drives the same way."""

from __future__ import annotations

import dataclasses
import inspect
import json
from typing import Any, Callable

import numpy as np
import pytest

from _extras import policy_param
from hss_gym.agents import BasePolicy, Policy, fleetio, list_policies, make_env, make_policy, run_episode
from hss_gym.agents.base import PROTOCOL
from hss_gym.agents.fleetio import FleetIOPolicy
from hss_gym.agents.heuristics import HPS
from hss_gym.agents.lqoco import ControlPolicy
from hss_gym.agents.rlalloc import AllocPolicy
from hss_gym.envs.fleetio.env import FleetIOEnv
from hss_gym.envs.lqoco.env import LQoCoEnv
from hss_gym.envs.rlalloc.env import RLAllocEnv


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


# ---------------------------------------------------------------------------------- the protocol
@pytest.mark.parametrize("spec", [policy_param(n) for n in list_policies("all")])
def test_every_registered_policy_follows_the_protocol(spec: str):
    """reset(env, seed=None), act(observations, infos), observe(observations, rewards, infos), as
    BasePolicy declares them, on every policy of every problem."""
    policy = make_policy(spec, seed=0)
    assert isinstance(policy, BasePolicy)
    for method, args in PROTOCOL.items():
        sig = inspect.signature(getattr(policy, method))
        assert tuple(sig.parameters) == args, f"{spec}: {method}{sig}"
    assert inspect.signature(policy.reset).parameters["seed"].default is None
    assert isinstance(policy.name, str) and isinstance(policy.learns, bool)


def test_an_old_signature_is_refused_when_the_class_is_defined():
    """FleetIO's former act(obs) and RLAlloc's former observe(obs, action, reward, next_obs, done)
    fail where the class is written, saying what the protocol calls, not in the middle of a run."""
    with pytest.raises(TypeError, match=r"OldFleetIO\.act\(self, obs\) cannot be called as act\(observations, infos\)"):
        class OldFleetIO(FleetIOPolicy):
            def act(self, obs):
                return {}
    with pytest.raises(TypeError, match=r"observe\(self, obs, action, reward, next_obs, done\) cannot be called as "
                                        r"observe\(observations, rewards, infos\)"):
        class OldAlloc(AllocPolicy):
            def observe(self, obs, action, reward, next_obs, done):
                pass

    class Flexible(ControlPolicy):  # any signature the loops can call is fine
        def act(self, *args: Any) -> int:
            return 2

    assert Flexible().act(0, {}) == 2



def recorder(base: type[BasePolicy], inner: BasePolicy) -> Any:
    """``inner`` inside a policy of its problem's ``base`` that records every call a loop makes and
    what ``act`` returned; it learns (so the loop observes it) and passes ``observe`` on to a
    learner."""

    class Recorder(base):  # type: ignore[valid-type, misc]
        name = inner.name
        learns = True

        def __init__(self) -> None:
            self.inner, self.calls = inner, []
            for k in ("agents", "env_options"):  # what the HSS and FleetIO loops read
                if hasattr(inner, k):
                    setattr(self, k, getattr(inner, k))

        def reset(self, env: Any, seed: int | None = None) -> None:
            self.calls.append(("reset", env, seed))
            inner.reset(env, seed)

        def act(self, observations: Any, infos: Any) -> Any:
            actions = inner.act(observations, infos)
            self.calls.append(("act", observations, infos, actions))
            return actions

        def observe(self, observations: Any, rewards: Any, infos: Any) -> None:
            self.calls.append(("observe", observations, rewards, infos))
            if inner.learns:
                inner.observe(observations, rewards, infos)

    return Recorder()


def _hss_env(policy: Any) -> Any:
    return make_env(policy, "perf_opt", "ycsb-b", n_requests=200)


def _episode(spec: str, base: type, make: Callable[[Any], Any]) -> Any:
    """A test parameter: a policy, its problem's base class and a small env for it (skipped as
    :func:`policy_param` skips)."""
    p = policy_param(spec)
    return pytest.param(spec, base, make, id=spec, marks=() if isinstance(p, str) else p.marks)


EPISODES = [
    _episode("hss/hps", Policy, _hss_env),
    _episode("hss/random", Policy, _hss_env),
    _episode("fleetio/fleetio_ppo", FleetIOPolicy, lambda p: fleetio.make_env(p, "mix1", windows=3)),
    _episode("fleetio/software_isolation", FleetIOPolicy, lambda p: fleetio.make_env(p, "mix1", windows=3)),
    _episode("rlalloc/dynamic", AllocPolicy, lambda p: RLAllocEnv(episode_periods=6)),
    _episode("rlalloc/rlalloc_dqn", AllocPolicy, lambda p: RLAllocEnv(episode_periods=6)),
    _episode("lqoco/lqoco", ControlPolicy, lambda p: LQoCoEnv(periods=30, **p.env_options)),
    _episode("lqoco/coto", ControlPolicy, lambda p: LQoCoEnv(periods=30, **p.env_options)),
]


def _text(metrics: Any) -> str:
    """An episode's metrics (a RunMetrics or a dict) as text, to compare exactly."""
    m = dataclasses.asdict(metrics) if dataclasses.is_dataclass(metrics) else metrics
    return json.dumps(m, sort_keys=True, default=repr)


@pytest.mark.parametrize("spec, base, make", EPISODES)
def test_run_episode_drives_the_protocol_the_same_way_for_every_problem(spec: str, base: type, make: Callable):
    """Every problem's loop: reset(env, seed) after env.reset, then act on the env's latest
    observations and infos and observe what the step returned, in turn, one act per step; the
    recording changes nothing (the same metrics as the policy run alone)."""
    seed = 3
    rec = recorder(base, make_policy(spec, seed=seed))
    env = make(rec)
    result = run_episode(rec, env, seed=seed)
    calls = rec.calls
    assert calls[0] == ("reset", env, seed)
    assert [c[0] for c in calls[1:]] == ["act", "observe"] * result.steps and result.steps > 1
    first_obs, _ = make(rec).reset(seed=seed)
    np.testing.assert_equal(calls[1][1], first_obs)
    acts, observed = calls[1::2], calls[2::2]
    for k in range(result.steps - 1):  # act k + 1 sees what observe k got: the env's latest
        assert acts[k + 1][1] is observed[k][1] and acts[k + 1][2] is observed[k][3]
    for name, curve in getattr(result, "curves", {}).items():  # FleetIO, RLAlloc: reward per step
        rewards = [np.mean(list(o[2].values())) if isinstance(o[2], dict) else o[2] for o in observed]
        assert curve == pytest.approx(rewards), name
    alone = make_policy(spec, seed=seed)
    assert _text(run_episode(alone, make(alone), seed=seed).metrics) == _text(result.metrics)


@pytest.mark.parametrize("spec", [policy_param("rlalloc/rlalloc_dqn")])
def test_the_dqn_learns_from_the_transitions_it_keeps_itself(spec: str):
    """RLAlloc's DQN gets (next state, reward, info) in observe and stores the transition from the
    state and action of its own last act: its replay buffer holds exactly the episode's steps."""
    rec = recorder(AllocPolicy, make_policy(spec, seed=1))
    result = run_episode(rec, RLAllocEnv(episode_periods=8), seed=1)
    buf = rec.inner.agent.buffer
    acts, observed = rec.calls[1::2], rec.calls[2::2]
    assert len(buf) == result.steps == len(acts) == 8
    for k in range(result.steps):
        np.testing.assert_array_equal(buf.obs[k], np.float32(acts[k][1]))
        np.testing.assert_array_equal(buf.next_obs[k], np.float32(observed[k][1]))
        assert buf.act[k] == acts[k][3] and buf.rew[k] == np.float32(observed[k][2]) and buf.done[k] == 0
