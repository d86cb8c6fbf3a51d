"""The environments keep the PettingZoo/Gymnasium contracts and the reward semantics of SPEC §3."""
from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test

import hss_gym
from hss_gym.envs import HSSParallelEnv
from hss_gym.envs.hss.single import SingleAgentEnv, fixed_device, stay
from hss_gym.envs._contract import EpisodeStateError
from hss_gym.workloads import Trace

PAGE = 4096


def hand_trace(n: int, gap: float = 1000.0, pages: int = 64, write_every: int = 1) -> Trace:
    i = np.arange(n)
    return Trace.from_arrays(i * gap, (i % write_every == 0).astype(np.uint8), (i % pages) * PAGE,
                             np.full(n, PAGE), name="hand")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def test_parallel_api():
    # PettingZoo's API test calls reset(options={"options": 1}); unknown reset options are ignored
    # with a warning naming them (documented in the env's docstring), not an error.
    with pytest.warns(UserWarning, match=r"ignoring unknown reset option\(s\) \['options'\]"):
        parallel_api_test(hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=2000), num_cycles=500)


def _shares_memory(a, b) -> bool:
    """Whether two returned structures share a mutable object (Gymnasium's data-reuse rule)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a is b or any(_shares_memory(a[k], b[k]) for k in a.keys() & b.keys())
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.shares_memory(a, b))
    return isinstance(a, list) and a is b


def test_calls_return_fresh_data():
    """reset() and step() results (observations and infos, both agents) share no object."""
    env = hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=200)
    calls = [env.reset(seed=0)]
    for _ in range(3):
        obs, _, _, _, infos = env.step({"placement": 0, "migration": 0})
        calls.append((obs, infos))
    calls.append(env.reset(seed=0))
    for i, (obs_1, infos_1) in enumerate(calls):
        assert not _shares_memory(infos_1["placement"], infos_1["migration"])
        for obs_2, infos_2 in calls[i + 1:]:
            assert not _shares_memory(obs_1, obs_2)
            assert not _shares_memory(infos_1, infos_2)


@pytest.mark.parametrize("config, dim", [("perf_opt", 7), ("tri", 8), ("quad", 9)])
def test_spaces_and_fixed_agents(config, dim):
    env = hss_gym.parallel_env(config, "lun2", n_requests=500)
    obs, infos = env.reset(seed=1)
    assert env.possible_agents == env.agents == ["placement", "migration"]
    n = env.cfg.n_devices
    for a in env.agents:
        assert env.observation_space(a).shape == (dim,)
        assert env.action_space(a).n == n
        assert env.observation_space(a) is env.observation_space(a)  # cached
        assert obs[a].dtype == np.float32 and env.observation_space(a).contains(obs[a])
        assert infos[a]["action_mask"].dtype == np.int8 and len(infos[a]["action_mask"]) == n
    while env.agents:
        obs, r, te, tr, infos = env.step({a: env.action_space(a).sample() for a in env.agents})
        assert set(obs) == {"placement", "migration"}
        assert all(np.isfinite(v) for v in r.values())


def test_raw_bins_option():
    env = hss_gym.parallel_env("perf_opt", "ycsb-c", n_requests=300, raw_bins=True)
    obs, _ = env.reset(seed=0)
    space = env.observation_space("placement")
    assert isinstance(space, gym.spaces.MultiDiscrete)
    assert list(space.nvec) == [2, 8, 64, 64, 8, 2, 64]
    for _ in range(100):
        obs, *_ = env.step({"placement": 0, "migration": 1})
        assert space.contains(obs["placement"]) and space.contains(obs["migration"])


def _rollout(seed: int, steps: int):
    env = hss_gym.parallel_env("tri", "ycsb-b", n_requests=steps, noise_p=0.01, noise_sigma=1.0)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(123)
    out = []
    while env.agents:
        acts = {a: int(rng.integers(3)) for a in env.agents}
        obs, r, _, _, infos = env.step(acts)
        out.append((obs["placement"].tobytes(), obs["migration"].tobytes(), r["placement"],
                    r["migration"], tuple(infos["migration"]["credit"])))
    return out, infos["placement"]["metrics"]


def test_determinism_10000_steps():
    a, ma = _rollout(7, 10_000)
    b, mb = _rollout(7, 10_000)
    assert len(a) == 10_000 and a == b and ma == mb
    c, mc = _rollout(8, 10_000)
    assert mc != ma


def test_placement_reward_is_lref_over_latency():
    tr = hand_trace(50, gap=10_000.0)  # widely spaced: no queueing
    env = HSSParallelEnv("perf_opt", tr, migration=False)
    env.reset(seed=0)
    lref = env.reward_ref_us
    _, r, _, _, info = env.step({"placement": 0, "migration": 0})
    assert r["placement"] == pytest.approx(lref / info["placement"]["latency_us"])
    assert r["placement"] == pytest.approx(1.0, rel=0.25)  # a 4 KiB write on Optane ~ L_ref
    _, r_slow, _, _, info = env.step({"placement": 1, "migration": 0})
    assert r_slow["placement"] < 0.5 * r["placement"]     # the SATA SSD is slower


def test_no_placement_reward_when_not_acting():
    tr = hand_trace(40, pages=4, write_every=1000)  # reads of 4 pages: only first touches decide
    env = HSSParallelEnv("perf_opt", tr, migration=False)
    _, infos = env.reset(seed=0)
    acting = []
    while env.agents:
        acting.append(infos["placement"]["acting"])
        _, r, _, _, infos = env.step({"placement": 1, "migration": 0})
        if not acting[-1]:
            assert r["placement"] == 0.0
    assert acting[:4] == [True] * 4 and not any(acting[4:])


def test_delayed_migration_reward_and_credit():
    n_req, x, n = 400, 3, 5
    tr = hand_trace(n_req, gap=5_000.0, pages=32)
    env = HSSParallelEnv("perf_opt", tr, reward_x=x, reward_n=n, penalty=0.0, min_interval=1)
    obs, infos = env.reset(seed=0)
    lats, moves, paid = [], [], []
    while env.agents:
        acting = infos["migration"]["acting"]
        dev = env._hss.page(infos["migration"]["page"])["device"] if acting else 0
        step = infos["migration"]["step"]
        obs, r, _, _, infos = env.step({"placement": 1, "migration": 1 - dev})  # always move
        if acting:
            moves.append(step)
        lats.append(infos["placement"]["latency_us"])
        if infos["migration"]["credit"]:
            credit = infos["migration"]["credit"]
            assert len(credit) >= x and all(s in moves for s in credit)
            # reward = L_ref * n / (sum of the n latencies ending at this step)
            window = lats[-n:]
            assert r["migration"] == pytest.approx(env.reward_ref_us * n / sum(window))
            paid.append(credit)
        else:
            assert r["migration"] == 0.0
    assert len(paid) >= 3
    flat = [s for c in paid for s in c]
    assert flat == sorted(flat) and len(set(flat)) == len(flat)  # each action paid once, in order
    # Moves execute faster than windows close here (one per request, windows of n): every move is
    # paid for, bar those of the last window or two, instead of a backlog that grows without end.
    assert len(moves) - len(flat) <= 2 * (x + n) + env.cfg.queue_size


def test_penalty_lowers_migration_reward():
    def total(pen):
        env = HSSParallelEnv("perf_opt", hand_trace(300, gap=5_000.0, pages=16), reward_x=2, reward_n=3,
                             penalty=pen, min_interval=1)
        _, infos = env.reset(seed=0)
        s = 0.0
        while env.agents:
            p = infos["migration"]["page"]
            dev = env._hss.page(p)["device"] if p >= 0 else 0
            _, r, _, _, infos = env.step({"placement": 0, "migration": 1 - dev})
            s += r["migration"]
        return s
    assert total(5.0) < total(0.0)


def test_final_step_summary_and_metrics_any_time():
    env = hss_gym.parallel_env("perf_opt", "lun0", n_requests=300, max_steps=120)
    env.reset(seed=0)
    for _ in range(10):
        env.step({"placement": 0, "migration": 0})
    assert env.metrics().requests == 10
    infos = None
    while env.agents:
        _, _, _, trunc, infos = env.step({"placement": 0, "migration": 0})
    assert all(trunc.values())
    m = infos["placement"]["metrics"]
    assert m["requests"] == 120 and m["mean_latency_us"] > 0


def test_render_and_state():
    env = hss_gym.parallel_env("quad", "lun1", n_requests=200, render_mode="ansi")
    env.reset(seed=0)
    env.step({"placement": 0, "migration": 0})
    text = env.render()
    assert "step 1/200" in text and "LSSD" in text
    assert env.state().shape == (2 * 9,)


def test_reset_options_change_workload_and_window():
    env = hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=1000)
    env.reset(seed=0, options={"workload": "lun3", "window": (100, 300)})
    steps = 0
    while env.agents:
        env.step({"placement": 0, "migration": 0})
        steps += 1
    assert steps == 200


def test_bad_input():
    env = hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=200)
    with pytest.raises(RuntimeError, match="reset"):
        env.step({"placement": 0, "migration": 0})
    env.reset(seed=0)
    with pytest.raises(KeyError, match="exactly the keys"):
        env.step({"placement": 0})
    with pytest.raises(KeyError, match="exactly the keys"):
        env.step({"placement": 0, "migration": 0, "extra": 1})
    with pytest.raises(ValueError, match=r"placement.*\[0, 2\)"):
        env.step({"placement": 5, "migration": 0})
    with pytest.raises(TypeError, match="must be an int"):
        env.step({"placement": 0.5, "migration": 0})
    with pytest.raises(ValueError, match="unknown workload"):
        hss_gym.parallel_env("perf_opt", "ycsb-z").reset()
    with pytest.raises(ValueError, match="unknown configuration"):
        hss_gym.parallel_env("perf", "ycsb-b")
    with pytest.raises(ValueError, match="unknown option.*not_an_option"):
        hss_gym.parallel_env("perf_opt", "ycsb-b", not_an_option=1)
    with pytest.raises(ValueError, match="reward_n"):
        hss_gym.parallel_env("perf_opt", "ycsb-b", reward_n=0)
    with pytest.raises(ValueError, match="backend"):
        hss_gym.parallel_env("perf_opt", "ycsb-b", backend="nvme-of")
    with pytest.raises(ValueError, match="window"):
        hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=100, window=(50, 500)).reset()


@pytest.mark.parametrize("env_id", ["hss/Placement-v0", "hss/Migration-v0"])
def test_gymnasium_and_sb3_check_env(env_id):
    env = gym.make(env_id, workload="ycsb-b", n_requests=2000)
    check_env(env.unwrapped)
    sb3 = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3.check_env(env.unwrapped)


def test_placement_env_is_sibyl_and_steps_are_decisions():
    env = gym.make("hss/Placement-v0", workload="ycsb-b", n_requests=1000, config="cost_opt")
    obs, info = env.reset(seed=0)
    assert env.observation_space.shape == (6,)
    total = 0.0
    while True:
        assert info["acting"]
        obs, r, term, trunc, info = env.step(0)
        total += r
        assert np.isfinite(r) and r >= 0
        if trunc:
            break
    assert total > 0


def test_migration_env_passes_credit():
    env = gym.make("hss/Migration-v0", workload="lun2", n_requests=4000, min_interval=1)
    obs, info = env.reset(seed=0)
    credited = []
    trunc = False
    while not trunc:
        obs, r, term, trunc, info = env.step(env.action_space.sample())
        if info["credit"]:
            credited.append((r, info["credit"]))
        else:
            assert r == 0.0
    assert credited and all(len(c) >= 10 for _, c in credited)


@pytest.mark.parametrize("features", ["harmonia", "sibyl"])
def test_fast_step_is_step_without_the_dicts(features):
    """fast_step (the policies' own loops) returns step()'s observations, rewards and infos, and
    leaves the env in the same state, on a run that moves pages and pays migration rewards."""
    kw = dict(n_requests=3000, features=features, fast_fraction=0.05)
    envs = [HSSParallelEnv("perf_opt", "ycsb-b", **kw), HSSParallelEnv("perf_opt", "ycsb-b", **kw)]
    (obs, infos), _ = envs[0].reset(seed=3), envs[1].reset(seed=3)
    rng, n, paid = np.random.default_rng(0), 0, 0
    while envs[0].agents:
        place, move = int(rng.integers(2)), int(rng.integers(2))
        o, r, _, trunc, inf = envs[0].step({"placement": place, "migration": move})
        fo_p, fo_m, r_p, r_m, lat, ev, credit, executed, delay, done, needs, page, dev = envs[1].fast_step(place, move)
        np.testing.assert_array_equal(o["placement"], fo_p)
        np.testing.assert_array_equal(o["migration"], fo_m)
        assert (r["placement"], r["migration"]) == (r_p, r_m) and trunc["placement"] == done
        p, m = inf["placement"], inf["migration"]
        assert (p["latency_us"], p["evicted"], p["acting"], p["step"]) == (lat, ev, needs, envs[1].step_index)
        assert (m["credit"], m["executed"], m["move_delay_us"], m["page"], m["device"], m["acting"]) == \
            (credit, executed, delay, page, dev, page >= 0)
        n, paid = n + 1, paid + bool(credit)
    assert n == 3000 and not envs[1].agents and paid > 0
    np.testing.assert_array_equal(envs[0].latencies(), envs[1].latencies())
    assert envs[0].metrics() == envs[1].metrics()


def _single_run(env: SingleAgentEnv, seed: int, steps: int) -> list[Any]:
    """What a single-agent env returns over ``steps`` random actions, autoresets included."""
    obs, info = env.reset(seed=seed)
    rng, out = np.random.default_rng(seed), [(obs.tobytes(), repr(info))]
    for _ in range(steps):
        o, r, term, trunc, inf = env.step(int(rng.integers(env.action_space.n)))
        out.append((o.tobytes(), r, term, trunc, repr({k: v.tobytes() if isinstance(v, np.ndarray) else v
                                                        for k, v in inf.items()})))
        if trunc:
            obs, info = env.reset()
            out.append((obs.tobytes(), repr(info)))
    return out


@pytest.mark.parametrize("agent, other, reward", [
    ("placement", fixed_device(0), "ratio"), ("placement", fixed_device(1), "ratio"), ("placement", stay, "ratio"),
    ("placement", fixed_device(0), "latency"), ("migration", fixed_device(0), "ratio"),
    ("migration", fixed_device(1), "ratio")])
def test_single_agent_env_with_a_constant_other_agent_gives_the_general_paths_results(agent, other, reward):
    """With a built-in other policy (its action the same on every step) a single-agent step runs on
    fast_step without the dicts; the same policy wrapped in a function takes the general path,
    which asks it at every step: every observation, reward, episode end and info is the same,
    across episode ends, with the migration agent's moves and credits."""
    def make(policy: Any) -> SingleAgentEnv:
        return SingleAgentEnv(HSSParallelEnv("perf_opt", "ycsb-b", n_requests=1500, fast_fraction=0.05,
                                             reward=reward), agent, policy)
    fast, general = make(other), make(lambda obs, info: other(obs, info))
    assert fast._const is not None and general._const is None
    a, b = _single_run(fast, 4, 4000), _single_run(general, 4, 4000)
    assert sum(len(x) == 2 for x in a) >= 3  # episode ends and resets
    assert a == b
    if agent == "migration":
        assert any("'credit': [" in x[4] and "'credit': []" not in x[4] for x in a if len(x) == 5)


def test_fast_step_checks_the_placement_and_says_when_it_cannot_run():
    """fast_step is the episode's C stepper: a placement outside the devices is refused where the
    request needs one, and before reset(), after the episode's end and after close() it says so."""
    env = HSSParallelEnv("perf_opt", "ycsb-b", n_requests=200)
    with pytest.raises(EpisodeStateError, match=r"before reset\(\)"):
        env.fast_step(0, -1)
    _, infos = env.reset(seed=0)
    needs = infos["placement"]["acting"]
    while not needs:
        needs = env.fast_step(0, -1)[10]
    step = env.step_index
    with pytest.raises(ValueError, match=r"placement must be a device in 0\.\.1, got 2"):
        env.fast_step(2, -1)
    assert env.step_index == step  # nothing happened
    while env.agents:
        env.fast_step(0, -1)
    assert env.step_index == 200
    with pytest.raises(RuntimeError, match="the episode has ended"):
        env.fast_step(0, -1)
    env.close()
    with pytest.raises(EpisodeStateError, match=r"after close\(\): the env is closed"):
        env.fast_step(0, -1)
