"""Fresh episodes: Gymnasium's seeding convention in every env of the package.

``reset(seed=s)`` gives the same episode every time; an unseeded ``reset()`` continues the env's
random generator, so successive unseeded resets give new episodes, and the sequence after
``reset(seed=s)`` is reproducible given ``s``. Also through ``gymnasium.make`` and SB3's
``make_vec_env`` (which seeds only the first reset); and ``trace_window``, the option that draws each
episode of a trace workload as a window of it.
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest

import hss_gym
from hss_gym import fleetio_v0, fleetio_v1
from hss_gym.workloads import make_trace

from _extras import requires


def _digest(x: Any) -> str:
    return hashlib.sha256(pickle.dumps(x)).hexdigest()


def _parallel(env: Any, action: Callable[[str], Any], steps: int) -> Callable[..., str]:
    def episode(**reset: Any) -> str:
        out = [env.reset(**reset)]
        for _ in range(steps):
            out.append(env.step({a: action(a) for a in env.agents}))
        return _digest(out)
    return episode


def _single(env: gym.Env, action: Any, steps: int) -> Callable[..., str]:
    def episode(**reset: Any) -> str:
        out = [env.reset(**reset)]
        for _ in range(steps):
            out.append(env.step(action))
        return _digest(out)
    return episode


#: every env of the package as a function of (reset kwargs) -> a digest of the episode's start
EPISODES = {
    "hss_v0": lambda: _parallel(hss_gym.parallel_env("tri", "ycsb-b", n_requests=300), lambda a: 0, 30),
    "Placement-v0": lambda: _single(gym.make("hss/Placement-v0", workload="lun2", n_requests=300), 0, 20),
    "Migration-v0": lambda: _single(gym.make("hss/Migration-v0", workload="lun2", n_requests=300), 1, 20),
    "fleetio_v1": lambda: _parallel(fleetio_v1.parallel_env(mix="mix1", windows=2, warmup=1),
                                    lambda a: np.array([0, 0, 1]), 1),
    "fleetio_v0": lambda: _parallel(fleetio_v0.parallel_env(mix="mix1", windows=2, warmup=1),
                                    lambda a: np.array([0, 0, 1]), 1),
    "RLAlloc-v0": lambda: _single(gym.make("hss/RLAlloc-v0", episode_periods=3), 0, 2),
    "LQoCo-v0": lambda: _single(gym.make("hss/LQoCo-v0", periods=30), 1, 30),
}
ALL_ENVS = pytest.mark.parametrize("name", sorted(EPISODES))


@ALL_ENVS
def test_same_seed_same_episode(name: str) -> None:
    episode = EPISODES[name]()
    first = episode(seed=5)
    assert episode(seed=5) == first  # the same env again
    assert EPISODES[name]()(seed=5) == first  # a new env
    assert episode(seed=6) != first


@ALL_ENVS
def test_unseeded_resets_draw_new_episodes(name: str) -> None:
    episode = EPISODES[name]()
    seeded = episode(seed=5)
    fresh = [episode() for _ in range(2)]
    assert len({seeded, *fresh}) == 3  # the seeded one is not replayed, nor the previous unseeded one


@ALL_ENVS
def test_unseeded_resets_reproducible_given_the_seed(name: str) -> None:
    a, b = EPISODES[name](), EPISODES[name]()
    assert [a(seed=11), a(), a()] == [b(seed=11), b(), b()]
    # a seeded reset restarts the sequence: the env's generator is reseeded, not continued
    assert [a(seed=11), a()] == [b(seed=11), b()]


def test_fresh_envs_unseeded_differ() -> None:
    """Before any seed the generator comes from entropy (Gymnasium's convention): two fresh envs'
    unseeded episodes differ, so vectorised envs nobody seeds do not all play one episode."""
    assert EPISODES["hss_v0"]()() != EPISODES["hss_v0"]()()


def test_the_workload_itself_changes() -> None:
    """A synthetic workload is generated again from the drawn seed (not only the device model's
    noise): the requests differ."""
    env = hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=500)
    env.reset(seed=0)
    first = env.trace.offset.copy()
    env.reset()
    assert not np.array_equal(env.trace.offset, first)
    env.reset(seed=0)
    np.testing.assert_array_equal(env.trace.offset, first)


@requires("stable_baselines3")
def test_sb3_make_vec_env_sees_new_episodes() -> None:
    """``make_vec_env`` seeds each env's first reset only; the automatic resets after it must not
    replay that episode."""
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env("hss/Placement-v0", n_envs=2, seed=0,
                        env_kwargs={"workload": "lun2", "n_requests": 60})
    parallel = [e.unwrapped.env for e in venv.envs]
    venv.reset()
    seen = {_digest(p.trace.offset.tobytes()) for p in parallel}
    episodes = 0
    while episodes < 6:
        _, _, dones, _ = venv.step(np.zeros(2, dtype=np.int64))
        for i in np.flatnonzero(dones):
            seen.add(_digest(parallel[i].trace.offset.tobytes()))
            episodes += 1
    assert len(seen) == 2 + episodes  # every episode's requests are new
    venv.close()


# ------------------------------------------------------------------ trace windows

LONG = make_trace("lun2", n=5_000, seed=3)


def test_trace_window_draws_windows_of_the_trace() -> None:
    env = hss_gym.parallel_env("perf_opt", LONG, trace_window=400)
    env.reset(seed=1)
    w1 = env.episode_window
    assert len(env.trace) == 400 and w1[1] - w1[0] == 400 and 0 <= w1[0] and w1[1] <= len(LONG)
    np.testing.assert_array_equal(env.trace.offset, LONG.offset[w1[0]:w1[1]])
    starts = set()
    for _ in range(5):
        env.reset()
        starts.add(env.episode_window[0])
    assert len(starts) == 5
    env.reset(seed=1)
    assert env.episode_window == w1


def test_trace_window_length_range() -> None:
    env = hss_gym.parallel_env("perf_opt", LONG, trace_window=(100, 300))
    lengths = set()
    for s in range(8):
        env.reset(seed=s)
        start, stop = env.episode_window
        assert 100 <= stop - start <= 300 and len(env.trace) == stop - start
        lengths.add(stop - start)
    assert len(lengths) > 1


def test_trace_window_from_a_file(tmp_path: Any) -> None:
    path = tmp_path / "t.csv"  # MSR Cambridge: Timestamp (100 ns ticks),Hostname,DiskNumber,Type,Offset,Size,ResponseTime
    path.write_text("".join(f"{128166372000000000 + i * 100},src,0,{'Read' if i % 3 else 'Write'},"
                            f"{(i * 7919 % 500) * 4096},4096,100\n" for i in range(1_000)))
    env = gym.make("hss/Placement-v0", workload=str(path), trace_window=200, n_requests=None)
    env.reset(seed=0)
    par = env.unwrapped.env
    first = par.episode_window
    env.reset()
    assert par.episode_window != first and len(par.trace) == 200


@pytest.mark.parametrize("kwargs, match", [
    ({"trace_window": 0}, "trace_window"),
    ({"trace_window": (300, 100)}, "reversed"),
    ({"trace_window": "100"}, "trace_window must be"),
    ({"trace_window": 100, "window": (0, 200)}, "give one of them"),
])
def test_trace_window_invalid(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        hss_gym.parallel_env("perf_opt", LONG, **kwargs)


def test_trace_window_refuses_generated_workloads_and_overlong_windows() -> None:
    with pytest.raises(ValueError, match="trace_window is for trace workloads"):
        hss_gym.parallel_env("perf_opt", "ycsb-b", trace_window=100)
    env = hss_gym.parallel_env("perf_opt", LONG, trace_window=100)
    with pytest.raises(ValueError, match="trace_window is for trace workloads"):
        env.reset(seed=0, options={"workload": "ycsb-b"})
    with pytest.raises(ValueError, match="give one of them"):
        env.reset(seed=0, options={"window": (0, 50)})
    with pytest.raises(ValueError, match="asks for up to 6000 requests; the trace has 5000"):
        hss_gym.parallel_env("perf_opt", LONG, trace_window=6_000).reset(seed=0)


# ---------------------------------------------------------------------------------- reward="latency"

def test_latency_reward_is_minus_the_scaled_latency_of_every_step() -> None:
    env = hss_gym.parallel_env("cost_opt", "ycsb-b", n_requests=400, reward="latency")
    ref = hss_gym.parallel_env("cost_opt", "ycsb-b", n_requests=400)
    env.reset(seed=0)
    ref.reset(seed=0)
    idle = 0
    while env.agents:
        acts = {"placement": 1, "migration": 0}
        _, r, _, _, infos = env.step(acts)
        _, r_ref, _, _, _ = ref.step(acts)
        lat = infos["placement"]["latency_us"]
        assert r["placement"] == pytest.approx(-lat / env.reward_ref_us)
        assert r["migration"] == r_ref["migration"]  # the migration reward is not changed
        idle += r_ref["placement"] == 0.0  # steps where the placement agent did not act
    assert idle > 0  # ... and it is rewarded there too
    np.testing.assert_array_equal(env.latencies(), ref.latencies())  # the same episode


def test_placement_v0_latency_return_is_minus_the_summed_latency() -> None:
    """The return of ``hss/Placement-v0`` with ``reward="latency"`` is minus the sum of the
    episode's latencies (from its first decision) over ``L_ref``: the leaderboard's mean latency
    times a constant."""
    env = gym.make("hss/Placement-v0", config="cost_opt", workload="ycsb-b", n_requests=400, reward="latency")
    env.reset(seed=0)
    par = env.unwrapped.env
    first = par.step_index
    total, done = 0.0, False
    rng = np.random.default_rng(0)
    while not done:
        _, r, term, trunc, _ = env.step(int(rng.integers(2)))
        total += r
        done = term or trunc
    assert total == pytest.approx(-par.latencies()[first:].sum() / par.reward_ref_us)


def test_reward_option_checked() -> None:
    with pytest.raises(ValueError, match="reward must be one of 'ratio', 'latency', got 'neg'"):
        hss_gym.parallel_env("perf_opt", "ycsb-b", reward="neg")
