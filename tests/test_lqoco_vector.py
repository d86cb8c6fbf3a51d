"""hss/LQoCo-v0's C step and its native vector env (hss_gym/envs/lqoco/vector.py): the C env gives
the episodes of the Python logic it replaced (random.Random arrivals included), and the vector env
gives exactly what Gymnasium's SyncVectorEnv gives over the same envs (observations, rewards,
episode ends, the numeric infos), across next-step autoresets and staggered episodes; bad
arguments fail clearly."""
from __future__ import annotations

import math
import random

import gymnasium as gym
import numpy as np
import pytest

import hss_gym  # noqa: F401  (registers the ids)
from hss_gym.backends.lqoco.model import CacheSim
from hss_gym.envs.lqoco.env import LQoCoEnv, reward_of, state_index
from hss_gym.envs.lqoco.vector import LQoCoVectorEnv
from hss_gym.envs.lqoco.workloads import BURSTY, Burst


def python_episode(env: LQoCoEnv, seed: int, actions: list) -> list[tuple]:
    """(state, reward, W, rate in MB/s) per period of the Python implementation the C env replaced
    (env.py's _next_phase and _advance, workloads.py's Arrivals), on generated workloads."""
    np_random, _ = gym.utils.seeding.np_random(seed)  # what reset(seed=seed) seeds the env with
    rng = random.Random(int(np_random.integers(2**62)))
    sim = CacheSim(env.cache_spec, env.tier, env.period_s, env.substeps, env.bucket_s, env.bypass_us)
    ps, lo, hi = env.period_s, *env.rate_bounds
    st: dict = {"i": -1}

    def next_phase() -> None:
        st["i"] = (st["i"] + 1) % len(env.phases)
        ph = env.phases[st["i"]]
        sim.set_mix(ph.mix)
        r = ph.mix.read
        st["ratio"] = ratio = r / (1 - r) if r < 1 else 0.0
        st["nominal"] = 1e6 / (sim.flush_cost(0.5 * sim.C) * sim.tier.gc
                               + ratio * (1 - env.cache_spec.read_hit) * sim.rd_cost)
        st["burst"] = b = Burst(**{**(BURSTY if ph.mix.name.startswith("R-") else {}), **env.burst_opts})
        st["high"] = rng.random() < b.on_s / (b.on_s + b.off_s)
        st["left"] = ph.periods

    next_phase()
    rate, fh, out = env.init_rate * st["nominal"], [], []
    for t, a in enumerate(actions, 1):
        new = rate * (1.0 + env.magnitudes[a]) if isinstance(a, int) else a * 1e6
        if not math.isinf(new):
            new = min(max(new, lo * st["nominal"]), hi * st["nominal"])
        rate, b = new, st["burst"]
        if rng.random() < 1.0 / (b.on_s if st["high"] else b.off_s):
            st["high"] = not st["high"]
        level = b.high if st["high"] else b.low
        if b.wiggle > 0:
            level *= math.exp(b.wiggle * rng.gauss(0.0, 1.0))
        wr = env.load * level * st["nominal"]
        p = sim.period(new, wr * st["ratio"], wr, b.depth * sim.io)
        st["left"] -= 1
        W = sim.dirty / sim.C
        i, o = p.admitted / ps, p.flush_cap / ps
        P = (i - o) / max(o, 1.0)
        fh = (fh + [o])[-env.bdp_window:]
        B = i / max(max(fh), 1.0)
        wb, (blo, bhi) = env.w_bins, env.b_band
        s = (0 if W < wb[0] else 1 if W < wb[1] else 2 if W < wb[2] else 3,
             0 if P < -env.p_tol else 1 if P <= env.p_tol else 2, 0 if B > bhi else 1 if B >= blo else 2)
        out.append((state_index(*s), reward_of(*s, env.weights, env.reward_kind), W, rate / 1e6))
        if st["left"] <= 0 and t < env.periods:
            next_phase()
    return out


@pytest.mark.parametrize("kw, starts", [
    ({"workload": "S-13"}, [0]),
    ({"workload": [("R-A", 40), ("S-9", 30), ("R-D", 30)], "reward": "eq8", "config": "linux", "bypass_us": 500.0,
      "burst": {"wiggle": 0.4, "on_s": 5}}, [0, 40, 70, 100, 140])])
def test_c_env_is_the_python_logic_it_replaced(kw, starts):
    periods, rng = 150, np.random.default_rng(1)
    actions = [float(rng.uniform(1, 3000)) if k % 7 == 3 else math.inf if k % 11 == 5 else int(rng.integers(5))
               for k in range(periods)]
    env = LQoCoEnv(periods=periods, **kw)
    want = python_episode(env, 7, actions)
    env.reset(seed=7)
    got = []
    for a in actions:
        obs, r, _, _, info = env.step(a) if isinstance(a, int) else env.step_rate(a)
        got.append((obs, r, info["W"], info["rate_mbps"]))
    assert got == want
    assert len({s for s, *_ in got}) > 3 and [t for t, _ in env.phase_marks()] == starts


def _same_as_sync(steps: int, seed, n: int = 3, restart: int | None = None, **kw) -> tuple[int, int]:
    """Step SyncVectorEnv and the native env with the same random actions (and, at step
    ``restart``, a reset of env 0 only: episodes then end at different steps); every observation,
    reward, episode end and info the native env gives must equal SyncVectorEnv's. Returns the
    episode ends and the steps where some but not all envs were reset."""
    sync = gym.make_vec("hss/LQoCo-v0", num_envs=n, vectorization_mode="sync", **kw)
    vec = gym.make_vec("hss/LQoCo-v0", num_envs=n, vectorization_mode="vector_entry_point", **kw)
    assert isinstance(vec, LQoCoVectorEnv)

    def same(a: dict, b: dict, t: int) -> None:
        strings = {"levels", "category", "workload"}
        assert {k for k in a if k.lstrip("_") not in strings} == set(b), f"step {t}: info keys differ"
        for k, y in b.items():
            assert a[k].dtype == y.dtype and np.array_equal(a[k], y), f"step {t}: info {k} differs:\n{a[k]}\n{y}"

    o1, i1 = sync.reset(seed=seed)
    o2, i2 = vec.reset(seed=seed)
    np.testing.assert_array_equal(o1, o2)
    same(i1, i2, 0)
    rng = np.random.default_rng(0)
    ends = staggered = 0
    for t in range(1, steps + 1):
        if t == restart:
            mask = np.arange(n) == 0
            o1, i1 = sync.reset(seed=99, options={"reset_mask": mask})
            o2, i2 = vec.reset(seed=99, options={"reset_mask": mask})
            assert np.array_equal(o1, o2)
            same(i1, i2, t)
        a = rng.integers(0, 5, n)
        r1, r2 = sync.step(a), vec.step(a)
        for name, x, y in zip(("observations", "rewards", "terminations", "truncations"), r1[:4], r2[:4]):
            assert x.dtype == y.dtype and np.array_equal(x, y), f"step {t}: {name} differ:\n{x}\n{y}"
        same(r1[4], r2[4], t)
        ends += int(r1[3].sum())
        stepped = r1[4].get("_admitted_mbps")  # the envs this step stepped (the others it reset)
        staggered += stepped is not None and 0 < stepped.sum() < n
    sync.close()
    vec.close()
    return ends, staggered


def test_native_is_sync_vector_env():
    ends, staggered = _same_as_sync(130, seed=[5, 11, 2], restart=17, workload="S-13", periods=40)
    assert ends >= 6 and staggered >= 3


def test_native_is_sync_vector_env_raw_eq8_phases_bypass():
    # raw observations, the eq. 8 reward, phase changes within the episode, bypass on HDDs
    ends, staggered = _same_as_sync(100, seed=3, n=4, restart=30, workload=["S-17", "R-B", "S-6"], periods=33,
                                    observation="raw", reward="eq8", config="linux", bypass_us=200.0)
    assert ends >= 8 and staggered >= 2


def test_copies_and_shared_arrays():
    vec = LQoCoVectorEnv(2, workload="S-5", periods=5, copy=True)
    shared = LQoCoVectorEnv(2, workload="S-5", periods=5)
    o1, _ = vec.reset(seed=0)
    o2, _ = shared.reset(seed=0)
    r1, r2 = vec.step(np.array([4, 0])), shared.step(np.array([4, 0]))
    assert np.array_equal(r1[0], r2[0]) and np.array_equal(r1[1], r2[1])
    assert r2[0] is shared.step(np.array([1, 1]))[0]           # the shared array, rewritten
    assert r1[0] is not vec.step(np.array([1, 1]))[0]
    assert shared.envs[0].t == 2 and len(shared.envs[0].history()["W"]) == 2  # the sub-envs read the C env


def test_bad_use_fails_clearly():
    vec = LQoCoVectorEnv(3, workload="S-13", periods=10)
    with pytest.raises(RuntimeError, match="before reset"):
        vec.step(np.zeros(3, np.int64))
    vec.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions\[1\] = 5 is not an action in 0..4"):
        vec.step(np.array([0, 5, 2]))
    with pytest.raises(ValueError, match=r"actions\[2\] = -1"):
        vec.step([0, 1, -1])
    with pytest.raises(ValueError, match="integer array of shape"):
        vec.step(np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="shape"):
        vec.step(np.array([0, 1]))
    vec.step(np.array([0, 1, 2]))  # a refused step changed nothing
    assert [e.t for e in vec.envs] == [1, 1, 1]
    with pytest.raises(ValueError, match="num_envs"):
        LQoCoVectorEnv(0)
    with pytest.raises(ValueError, match="does not render"):
        LQoCoVectorEnv(2, render_mode="ansi")
    refused = LQoCoVectorEnv.__new__(LQoCoVectorEnv)  # as __del__ finds one whose __init__ raised
    refused.close()
    with pytest.raises(ValueError, match="weights"):
        gym.make_vec("hss/LQoCo-v0", num_envs=2, weights=(1, 1, 1))
    vec.close()
    with pytest.raises(RuntimeError, match="after close"):
        vec.step(np.zeros(3, np.int64))
