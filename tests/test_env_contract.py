"""The contract every environment keeps under misuse: step before reset
and after the end raise; actions checked against the action space with no silent casts; agent
keys named; every numeric option finite and in range, named in the error; deepcopy and pickle
give an independent env that continues exactly as the original."""

from __future__ import annotations

import copy
import pickle
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest

import hss_gym
from hss_gym.envs import FleetIOEnv, LQoCoEnv, RLAllocEnv
from hss_gym.agents import make_env, make_policy, run_episode
from hss_gym.envs._contract import ActionKeysError, EpisodeStateError
from hss_gym.workloads.trace import Trace


def harmonia(**kw: Any) -> Any:
    return hss_gym.parallel_env("tri", "ycsb-b", **{"n_requests": 600, **kw})


def fleetio(**kw: Any) -> FleetIOEnv:
    return FleetIOEnv("mix1", **{"windows": 3, "warmup": 1, **kw})


def rlalloc(**kw: Any) -> RLAllocEnv:
    return RLAllocEnv(**{"episode_periods": 6, **kw})


def lqoco(**kw: Any) -> LQoCoEnv:
    return LQoCoEnv(**{"periods": 30, **kw})


def placement(**kw: Any) -> Any:
    return gym.make("hss/Placement-v0", n_requests=600, **kw)


def _all_actions(env: Any, a: Any) -> dict[str, Any]:
    return {k: a for k in env.possible_agents}


# ------------------------------------------------------------------ episode state

#: every env of the package, with an action it accepts
ENVS_AND_ACTIONS = pytest.mark.parametrize("make, action", [
    (harmonia, lambda e: _all_actions(e, 0)),
    (fleetio, lambda e: _all_actions(e, [0, 0, 1])),
    (rlalloc, lambda e: 0),
    (lqoco, lambda e: 2),
    (placement, lambda e: 0),
])


@ENVS_AND_ACTIONS
def test_step_before_reset_and_after_end_raise(make: Callable[..., Any], action: Callable[[Any], Any]) -> None:
    env = make()
    with pytest.raises(RuntimeError, match=r"before reset\(\)"):
        env.unwrapped.step(action(env.unwrapped))
    env.reset(seed=0)
    done = False
    while not done:
        out = env.step(action(env.unwrapped))
        trunc, term = out[3], out[2]
        done = all(trunc.values()) if isinstance(trunc, dict) else (trunc or term)
    with pytest.raises(EpisodeStateError, match=r"after the episode ended.*reset\(\)"):
        env.unwrapped.step(action(env.unwrapped))
    env.reset(seed=1)  # a new episode steps again
    env.step(action(env.unwrapped))


@ENVS_AND_ACTIONS
def test_step_after_close_says_the_env_is_closed(make: Callable[..., Any], action: Callable[[Any], Any]) -> None:
    env = make()
    env.reset(seed=0)
    env.step(action(env.unwrapped))
    env.close()
    with pytest.raises(EpisodeStateError, match=r"after close\(\): the env is closed"):
        env.unwrapped.step(action(env.unwrapped))
    env.reset(seed=1)  # a reset opens it again
    env.step(action(env.unwrapped))


# ------------------------------------------------------------------ actions

@pytest.mark.parametrize("bad", ["0", 1.5, True, 0.0, np.float64(1.0), None, [0]])
@pytest.mark.parametrize("make", [harmonia, rlalloc, lqoco])
def test_discrete_actions_are_not_cast(make: Callable[..., Any], bad: Any) -> None:
    env = make()
    env.reset(seed=0)
    act = _all_actions(env, bad) if make is harmonia else bad
    with pytest.raises(TypeError, match="no conversion"):
        env.step(act)


@pytest.mark.parametrize("make", [harmonia, rlalloc, lqoco])
def test_discrete_actions_range_and_numpy_ints(make: Callable[..., Any]) -> None:
    env = make()
    env.reset(seed=0)
    n = 3 if make is harmonia else env.action_space.n
    for bad in (-1, n):
        with pytest.raises(ValueError, match=r"must be an int in \[0, "):
            env.step(_all_actions(env, bad) if make is harmonia else bad)
    for good in (np.int64(1), np.int32(0), np.array(1), np.uint8(1)):
        env.step(_all_actions(env, good) if make is harmonia else good)


def test_harmonia_checks_the_action_of_an_agent_that_is_not_acting() -> None:
    env = harmonia()
    _, infos = env.reset(seed=0)
    assert not infos["migration"]["acting"]  # no candidate on the first request
    with pytest.raises(ValueError, match="'migration'"):
        env.step({"placement": 0, "migration": 7})
    with pytest.raises(ValueError, match="'migration'"):
        env.step({"placement": 0, "migration": -2})


def test_the_migration_stay_infos_give_is_accepted_whenever_it_is_not_acting() -> None:
    """``infos["migration"]["device"]`` is -1 when there is no candidate page; handing it back
    as the action (SUBMISSION.md's example policy does) is the stay, accepted only then."""
    env = harmonia()
    _, infos = env.reset(seed=0)
    steps = 0
    while env.agents and steps < 300:
        move = infos["migration"]["device"]
        assert (move == -1) == (not infos["migration"]["acting"])
        _, _, _, _, infos = env.step({"placement": 0, "migration": move})
        steps += 1
    assert steps == 300
    env.reset(seed=0)
    with pytest.raises(ValueError, match="'migration'"):
        while True:  # -1 once a candidate is judged: refused
            env.step({"placement": 0, "migration": -1})


@pytest.mark.parametrize("bad", [[0.0, 0, 1], np.array([1.5, 0, 1]), np.array([0, 0, 3]), "001", [True, 0, 1],
                                 [0, 0], 5])
def test_fleetio_actions_are_checked(bad: Any) -> None:
    env = fleetio()
    env.reset(seed=0)
    with pytest.raises((TypeError, ValueError), match="action of 'vssd_0'"):
        env.step(_all_actions(env, bad))
    env.step(_all_actions(env, np.array([1, 2, 0], dtype=np.int32)))  # NumPy integer arrays are fine


def test_rlalloc_factored_actions_are_checked() -> None:
    env = rlalloc(action_mode="factored")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="no conversion"):
        env.step(np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="nvec"):
        env.step([0, 1, env.n_units])
    env.step(np.array([env.n_streams, 0, 0]))


@pytest.mark.parametrize("make, ok", [(harmonia, 0), (fleetio, [0, 0, 1])])
def test_agent_keys_extra_and_missing_are_named(make: Callable[..., Any], ok: Any) -> None:
    env = make()
    env.reset(seed=0)
    agents = list(env.possible_agents)
    with pytest.raises(ActionKeysError, match=rf"unknown agent\(s\) \['intruder'\]"):
        env.step({**_all_actions(env, ok), "intruder": ok})
    with pytest.raises(ValueError, match=rf"missing agent\(s\) \['{agents[-1]}'\]"):
        env.step({a: ok for a in agents[:-1]})
    with pytest.raises(KeyError, match="exactly the keys"):  # both a KeyError and a ValueError
        env.step({a: ok for a in agents[:-1]} | {"x": ok})


# ------------------------------------------------------------------ numeric options

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("make, kw, name", [
    (harmonia, {"penalty": NAN}, "penalty"),
    (harmonia, {"penalty": INF}, "penalty"),
    (harmonia, {"penalty": -0.5}, "penalty"),
    (harmonia, {"reward_ref_us": -1}, "reward_ref_us"),
    (harmonia, {"reward_ref_us": 0}, "reward_ref_us"),
    (harmonia, {"reward_ref_us": NAN}, "reward_ref_us"),
    (harmonia, {"reward_n": 2.5}, "reward_n"),
    (harmonia, {"max_steps": 0}, "max_steps"),
    (harmonia, {"window": (50, 10)}, "reversed"),
    (harmonia, {"window": (-1, 10)}, "window start"),
    (harmonia, {"window": (5, 5)}, "empty"),
    (fleetio, {"token_rate": NAN}, "token_rate"),
    (fleetio, {"token_rate": 0}, "token_rate"),
    (fleetio, {"alpha": NAN}, "alpha"),
    (fleetio, {"alpha": [0.1, NAN]}, r"alpha\[1\]"),
    (fleetio, {"slo_us": [100.0, INF]}, r"slo_us\[1\]"),
    (fleetio, {"slo_guar": NAN}, "slo_guar"),
    (fleetio, {"window_s": NAN}, "window_s"),
    (fleetio, {"windows": 2.5}, "windows"),
    (fleetio, {"batch_ms": INF}, "batch_ms"),
    (fleetio, {"inference_ms": -1}, "inference_ms"),
    (rlalloc, {"reward_weights": (NAN, 1)}, r"reward_weights.*\[0\]"),
    (rlalloc, {"reward_weights": (1, INF)}, r"reward_weights.*\[1\]"),
    (rlalloc, {"period_us": INF}, "period_us"),
    (rlalloc, {"lat_ref_us": NAN}, "lat_ref_us"),
    (rlalloc, {"queue_depth": 2.5}, "queue_depth"),
    (rlalloc, {"precondition": 1.5}, "precondition"),
    (lqoco, {"weights": (NAN, 0, 0)}, r"weights.*\[0\]"),
    (lqoco, {"weights": (0.5, 0.5, 0.5)}, "summing to 1"),
    (lqoco, {"magnitudes": (-0.01, -0.03, 0.0, NAN, 0.03)}, r"magnitudes\[3\]"),
    (lqoco, {"rate_bounds": (0.05, INF)}, r"rate_bounds\[1\]"),
    (lqoco, {"p_tol": NAN}, "p_tol"),
    (lqoco, {"bypass_us": NAN}, "bypass_us"),
    (lqoco, {"trace_speedup": NAN}, "trace_speedup"),
    (lqoco, {"periods": 1.5}, "periods"),
])
def test_numeric_options_finite_in_range_and_named(make: Callable[..., Any], kw: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        make(**kw)


def test_reversed_window_in_reset_options() -> None:
    env = harmonia()
    with pytest.raises(ValueError, match=r"reversed.*did you mean \(10, 50\)"):
        env.reset(seed=0, options={"window": (50, 10)})
    with pytest.raises(ValueError, match="outside the trace's 600 requests"):
        env.reset(seed=0, options={"window": (10, 5000)})


def test_lqoco_step_rate_checked() -> None:
    env = lqoco()
    with pytest.raises(RuntimeError, match="before reset"):
        env.step_rate(100.0)
    env.reset(seed=0)
    for bad in (NAN, -1.0, 0.0, "100"):
        with pytest.raises(ValueError, match="rate_mbps"):
            env.step_rate(bad)
    env.step_rate(INF)


# ------------------------------------------------------------------ deepcopy and pickle

def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, float) and np.isnan(a):
        return isinstance(b, float) and np.isnan(b)
    return a == b


COPY_CASES = [
    (harmonia, lambda e, rng: {a: int(rng.integers(3)) for a in e.possible_agents}, 200),
    (fleetio, lambda e, rng: {a: rng.integers(0, [17, 17, 3]) for a in e.possible_agents}, 1),
    (rlalloc, lambda e, rng: int(rng.integers(e.action_space.n)), 2),
    (lqoco, lambda e, rng: int(rng.integers(5)), 10),
    (placement, lambda e, rng: int(rng.integers(2)), 100),
]


@pytest.mark.parametrize("make, draw, before", COPY_CASES)
def test_copy_and_pickle_continue_as_the_original(make: Callable[..., Any], draw: Callable[..., Any],
                                                  before: int) -> None:
    env = make()
    env.reset(seed=7)
    rng = np.random.default_rng(0)
    for _ in range(before):
        env.step(draw(env.unwrapped, rng))
    twins = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    for twin in twins:
        assert twin is not env and twin.unwrapped is not env.unwrapped
    done = False
    while not done:
        act = draw(env.unwrapped, rng)
        ref = env.step(copy.deepcopy(act))
        for twin in twins:
            out = twin.step(copy.deepcopy(act))
            assert _same(out[0], ref[0]) and _same(out[1], ref[1]) and _same(out[3], ref[3])
        trunc = ref[3]
        done = all(trunc.values()) if isinstance(trunc, dict) else bool(trunc)
    # the copies are independent: the original's end does not end them early, nor the reverse
    twins[0].reset(seed=3)
    with pytest.raises(EpisodeStateError):
        env.unwrapped.step(draw(env.unwrapped, rng))


@pytest.mark.parametrize("make", [lqoco, rlalloc, fleetio, harmonia])
def test_copy_before_reset_replays_the_unseeded_reset(make: Callable[..., Any]) -> None:
    env = make()
    twin = copy.deepcopy(env)
    a, b = env.reset(), twin.reset()  # no seed: both continue the same generator
    assert _same(a[0], b[0])
    act = ({k: [0, 0, 1] for k in env.possible_agents} if make is fleetio else
           {"placement": 1, "migration": 0} if make is harmonia else 1)
    assert _same(env.step(act)[:2], twin.step(act)[:2])


def test_harmonia_copy_after_fast_step_and_reset_options() -> None:
    env = harmonia()
    env.reset(seed=2, options={"window": (100, 500)})
    env.reset()  # the window persists; the copy starts from it too
    for _ in range(50):
        env.fast_step(1, 0)
    twin = pickle.loads(pickle.dumps(env))
    assert twin.window == (100, 500) and twin.step_index == env.step_index == 50
    np.testing.assert_array_equal(twin.latencies(), env.latencies())
    acts = {"placement": 0, "migration": 1}
    assert _same(twin.step(acts)[:2], env.step(acts)[:2])


def test_harmonia_copy_refused_when_changed_behind_its_back() -> None:
    """A change made through env.hss is not replayed: the copy would differ, so it raises."""
    env = harmonia()
    env.reset(seed=0)
    for _ in range(100):
        env.step({"placement": 0, "migration": 0})
    pages = (int(o) // 4096 for o in env.trace.offset[:100])
    page = next(p for p in pages if (m := env.hss.page(p)) and m["device"] == 0)
    env.hss.move(page, 2, 0.0)
    with pytest.raises(RuntimeError, match="outside its recorded calls"):
        copy.deepcopy(env)


def test_rlalloc_copy_replays_set_allocation() -> None:
    env = rlalloc()
    env.reset(seed=1)
    env.set_allocation([list(range(i * 8, i * 8 + 8)) for i in range(env.n_streams)])
    env.step(0)
    twin = copy.deepcopy(env)
    assert [a.tolist() for a in twin.allocation()] == [a.tolist() for a in env.allocation()]
    assert _same(twin.step(3)[:2], env.step(3)[:2])


def test_a_misspelt_env_option_names_the_option_meant() -> None:
    """A keyword that is neither an env option nor a configuration field is refused with the one
    probably meant and both lists (``n_request`` listed only the configuration's options)."""
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['n_request'\] \(did you mean 'n_requests'\?\); "
                                         r"env options: .*'room_feature'.*configuration options: .*'fast_fraction'"):
        harmonia(n_request=100)


def test_the_migration_stay_never_moves_a_page_the_request_placed_elsewhere() -> None:
    """The stay is the device ``infos["migration"]["device"]`` offered. When the request finished
    in the same step rewrites the candidate page onto another device, handing that device back
    must still move nothing (it queued a move back to the old device, a move nobody chose)."""
    trace = _rewrites(6000)
    for policy in ("fit_first", "sibyl"):
        pol = make_policy(policy, seed=0)
        env = make_env(pol, "perf_opt", trace, n_requests=6000, migration=True)  # its stays: infos' device
        run_episode(pol, env, seed=0)
        c = env.hss.counters()
        assert c["migrations"] == c["cleaned_pages"], (policy, c["migrations"], c["cleaned_pages"])


def _rewrites(n: int) -> Trace:
    """Writes over a small set of pages, each rewritten often, with mixed sizes: candidates are
    rewritten while they are offered, and a rewrite that does not fit the fast device lands on
    the slow one."""
    rng = np.random.default_rng(3)
    off = rng.integers(0, 3000, n, dtype=np.int64) << 12
    size = rng.choice(np.array([4096, 65536, 262144], dtype=np.int64), n)
    return Trace(np.arange(n, dtype=np.float64) * 50.0, np.ones(n, np.int8), off, size, name="rewrites")
