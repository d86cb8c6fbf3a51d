"""The native vector envs (hss_gym/envs/hss/vector.py) give exactly what Gymnasium's SyncVectorEnv
gives over the same envs (observations, rewards, episode ends, bit for bit, across next-step
autoresets), over one thread or two; the batched two-agent env what N two-agent envs give; bad
arguments fail clearly."""
from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import hss_gym  # noqa: F401  (registers the ids)
from hss_gym.envs import HSSParallelEnv
from hss_gym.envs.hss.vector import MigrationVectorEnv, ParallelVectorEnv, PlacementVectorEnv

# short episodes (a 150-400-request trace, part of its requests decisions): autoresets come early
SHORT = {"workload": "ycsb-a", "n_requests": 150}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def _same_as_sync(env_id: str, steps: int, seed, threads: int = 1, n_dev: int = 2, **kw) -> int:
    """Step SyncVectorEnv and the native env with the same random actions; returns the episode ends
    and the nonzero rewards seen (so the test can say it covered them)."""
    n = 4
    sync = gym.make_vec(env_id, num_envs=n, vectorization_mode="sync", **kw)
    vec = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point", threads=threads, **kw)
    o1, _ = sync.reset(seed=seed)
    o2, _ = vec.reset(seed=seed)
    np.testing.assert_array_equal(o1, o2)
    rng = np.random.default_rng(0)
    ends = nonzero = 0
    for t in range(steps):
        a = rng.integers(0, n_dev, n)
        r1, r2 = sync.step(a), vec.step(a)
        for name, x, y in zip(("observations", "rewards", "terminations", "truncations"), r1[:4], r2[:4]):
            assert x.dtype == y.dtype and np.array_equal(x, y), f"step {t}: {name} differ:\n{x}\n{y}"
        for k in np.flatnonzero(r1[3]):
            assert r2[4]["_metrics"][k]
            assert r2[4]["metrics"]["mean_latency_us"][k] == r1[4]["metrics"]["mean_latency_us"][k]
        ends += int(r1[3].sum())
        nonzero += int((r1[1] != 0).sum())
    sync.close()
    vec.close()
    return ends, nonzero


def test_placement_is_sync_vector_env():
    ends, nonzero = _same_as_sync("hss/Placement-v0", 600, seed=3, **SHORT)
    assert ends >= 8 and nonzero > 0


def test_migration_is_sync_vector_env():
    # small reward windows: many eq.-3 rewards (and their penalties) within the short episodes
    ends, nonzero = _same_as_sync("hss/Migration-v0", 500, seed=[5, 6, 7, 8], reward_x=3, reward_n=4,
                                  workload="ycsb-a", n_requests=250)
    assert ends >= 4 and nonzero >= 50


def test_two_threads_and_other_features():
    # raw bins, Harmonia's features with a middle device's free space (tri), room_feature="fits"
    ends, _ = _same_as_sync("hss/Migration-v0", 300, seed=11, threads=2, n_dev=3, config="tri", raw_bins=True,
                            room_feature="fits", reward_x=2, **SHORT)
    assert ends >= 4
    ends, _ = _same_as_sync("hss/Placement-v0", 300, seed=1, threads=3, **SHORT)
    assert ends >= 4


def test_two_agent_batch_is_n_parallel_envs():
    n, kw = 3, {"workload": "ycsb-a", "n_requests": 200, "reward_x": 3, "reward_n": 4, "config": "tri"}
    vec, envs = ParallelVectorEnv(n, threads=2, **kw), [HSSParallelEnv(**kw) for _ in range(n)]
    obs, infos = vec.reset(seed=10)
    ref = [e.reset(seed=10 + k) for k, e in enumerate(envs)]
    auto, rng, paid = [False] * n, np.random.default_rng(2), 0
    last = [i for _, i in ref]  # each env's last infos
    for t in range(500):
        if t:
            acts = {"placement": rng.integers(0, 3, n), "migration": rng.integers(-1, 3, n)}
            obs, rew, term, trunc, infos = vec.step(acts)
        for k, e in enumerate(envs):
            if t == 0:
                o, i = ref[k]
                r, done = {"placement": 0.0, "migration": 0.0}, False
            elif auto[k]:  # next-step autoreset
                (o, i), r, done = e.reset(), {"placement": 0.0, "migration": 0.0}, False
            else:
                a = {agent: int(acts[agent][k]) for agent in acts}
                if a["migration"] == -1 and last[k]["migration"]["page"] >= 0:
                    a["migration"] = last[k]["migration"]["device"]  # -1 with a candidate: stay
                o, r, _, tr, i = e.step(a)
                done = tr["placement"]
            for agent in ("placement", "migration"):
                assert np.array_equal(obs[agent][k], o[agent]), (t, k, agent)
                assert infos[agent]["acting"][k] == i[agent]["acting"], (t, k, agent)
                if t:
                    assert rew[agent][k] == r[agent], (t, k, agent, rew[agent][k], r[agent])
                    assert trunc[agent][k] == done and not term[agent][k]
            auto[k], last[k] = done, i
            paid += t > 0 and rew["migration"][k] != 0
    assert paid > 10


def test_registration_and_spaces():
    env = gym.make_vec("hss/Placement-v0", num_envs=2, n_requests=200)  # the default mode: native
    assert isinstance(env.unwrapped, PlacementVectorEnv)
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    single = gym.make("hss/Placement-v0", n_requests=200)
    assert env.single_observation_space == single.observation_space
    assert env.action_space == gym.vector.utils.batch_space(single.action_space, 2)
    obs, _ = env.reset(seed=0)
    assert obs in env.observation_space
    # copy=False: the shared arrays themselves; copy=True: fresh ones
    assert env.step(np.zeros(2, np.int64))[0] is obs
    env2 = MigrationVectorEnv(2, copy=True, n_requests=200)
    o2, _ = env2.reset(seed=0)
    assert env2.step(np.zeros(2, np.int64))[0] is not o2


def test_reset_mask_resets_only_those():
    env = PlacementVectorEnv(3, **SHORT)
    obs, _ = env.reset(seed=0)
    first = obs.copy()
    for _ in range(5):
        env.step(np.ones(3, np.int64))
    moved = obs.copy()
    env.reset(seed=0, options={"reset_mask": np.array([True, False, False])})
    np.testing.assert_array_equal(obs[0], first[0])
    np.testing.assert_array_equal(obs[1:], moved[1:])


def test_bad_arguments_fail_clearly():
    with pytest.raises(ValueError, match="num_envs must be an integer >= 1"):
        PlacementVectorEnv(0)
    refused = PlacementVectorEnv.__new__(PlacementVectorEnv)  # as __del__ finds one whose __init__ raised
    refused.close()
    with pytest.raises(ValueError, match=r"threads must be an integer in 1\.\.num_envs \(2\)"):
        PlacementVectorEnv(2, threads=3)
    with pytest.raises(ValueError, match="do not render"):
        PlacementVectorEnv(2, render_mode="ansi")
    with pytest.raises(ValueError, match="unknown option"):
        PlacementVectorEnv(2, n_request=10)
    with pytest.raises(ValueError, match="default reward .'ratio'. only.*reward='latency'"):
        PlacementVectorEnv(2, reward="latency", **SHORT)
    env = PlacementVectorEnv(2, **SHORT)
    with pytest.raises(RuntimeError, match="before reset"):
        env.step(np.zeros(2, np.int64))
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must be an integer array of shape \(2,\).*shape \(3,\)"):
        env.step(np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="dtype float64"):
        env.step(np.zeros(2))
    with pytest.raises(ValueError, match=r"actions\[1\] = 2 is not a device in 0\.\.1"):
        env.step(np.array([0, 2]))
    with pytest.raises(ValueError, match="length must match num_envs=2"):
        env.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match="threads must be"):
        env.threads = 0
    pair = ParallelVectorEnv(2, **SHORT)
    pair.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must be a dict with keys \['placement', 'migration'\]"):
        pair.step({"placement": np.zeros(2, np.int64)})
    with pytest.raises(ValueError, match=r"actions\['migration'\]\[0\] = -2 is not a device in -1\.\.1"):
        pair.step({"placement": np.zeros(2, np.int64), "migration": np.array([-2, 0])})


def test_sb3_adapter_is_dummy_vec_env():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv

    from hss_gym.envs.hss.sb3 import SB3VecEnv
    n = 3
    ours = SB3VecEnv(gym.make_vec("hss/Placement-v0", num_envs=n, **SHORT))
    ref = DummyVecEnv([lambda: gym.make("hss/Placement-v0", **SHORT) for _ in range(n)])
    ours.seed(4)
    ref.seed(4)
    np.testing.assert_array_equal(ours.reset(), ref.reset())
    rng, ends = np.random.default_rng(3), 0
    for t in range(400):
        a = rng.integers(0, 2, n)
        o1, r1, d1, i1 = ours.step(a)
        o2, r2, d2, i2 = ref.step(a)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(d1, d2)
        for k in np.flatnonzero(d1):
            np.testing.assert_array_equal(i1[k]["terminal_observation"], i2[k]["terminal_observation"])
            assert i1[k]["TimeLimit.truncated"] == i2[k]["TimeLimit.truncated"]
        ends += int(d1.sum())
    assert ends >= 6
    assert ours.get_attr("agent") == ["placement"] * n
    with pytest.raises(TypeError, match="wraps a native HSS vector env"):
        SB3VecEnv(ref)
