"""The environment's report of what executed migrations delay host I/O (``infos["migration"]``
``executed`` / ``move_delay_us``, counters ``migration_delay_us``) and Harmonia's opt-in use of it
(``MigrationAgent(move_delay=True)``). The measurement must not change the simulation."""

from __future__ import annotations

import pytest

import hss_gym


def _run(config: str, move: bool, **kw):
    env = hss_gym.parallel_env(config=config, workload="ycsb-b", n_requests=2000, **kw)
    obs, infos = env.reset(seed=0)
    executed, delay, lat, queued = 0, 0.0, [], 0
    while env.agents:
        dev = infos["migration"]["device"]
        a = {"placement": 0, "migration": (max(dev, 0) + 1) % 2 if move else max(dev, 0)}
        obs, _, _, _, infos = env.step(a)
        m = infos["migration"]
        assert isinstance(m["executed"], list) and m["move_delay_us"] >= 0.0
        assert m["move_delay_us"] == 0.0 or m["executed"]
        executed += len(m["executed"])
        delay += m["move_delay_us"]
        lat.append(infos["placement"]["latency_us"])
        core, c = env.hss.core, env.hss.counters()  # the hot path's cheap getters agree with counters()
        assert (core.queue_length, core.evictions, core.migration_delay_us) == \
            (c["queue_length"], c["evictions"], c["migration_delay_us"])
        queued = max(queued, core.queue_length)
    assert queued > 0 or not move or not env.migration_enabled
    return env.hss.counters(), executed, delay, lat


@pytest.mark.parametrize("config", ["perf_opt", "cost_opt"])
def test_move_delay_is_reported_per_step_and_sums_to_the_counter(config):
    c, executed, delay, _ = _run(config, move=True)
    assert executed == c["migrations"] + c["migrations_stale"] > 100
    assert delay == pytest.approx(c["migration_delay_us"])
    if config == "cost_opt":  # moves to and from a busy HDD delay host requests
        assert c["migration_delay_us"] > 1000.0 * c["migrations_busy"] > 0


def test_no_moves_no_delay():
    c, executed, delay, _ = _run("cost_opt", move=True, migration=False)
    assert executed == 0 and delay == 0.0 == c["migration_delay_us"]


def test_infos_lists_are_fresh():
    env = hss_gym.parallel_env(config="cost_opt", workload="ycsb-b", n_requests=200)
    _, infos = env.reset(seed=0)
    seen = [infos["migration"]["executed"]]
    while env.agents:
        dev = infos["migration"]["device"]
        _, _, _, _, infos = env.step({"placement": 0, "migration": (max(dev, 0) + 1) % 2})
        seen.append(infos["migration"]["executed"])
    assert len({id(x) for x in seen}) == len(seen)


def test_move_delay_credit_charges_the_moves():
    pytest.importorskip("torch")
    from hss_gym.agents.base import make_env, run_episode
    from hss_gym.agents.harmonia import Harmonia
    from hss_gym.workloads.registry import get_trace

    h = Harmonia(seed=0)
    m = h.migration
    m.explore_moves, m.explore_rate, m.learn_start, m.move_delay = 30, 1.0, 8, True
    trace = get_trace("learn-hot-scan", n=3000, seed=0)
    env = make_env(h, "cost_opt", trace)
    run_episode(h, env, seed=0)
    assert env.hss.counters()["migration_delay_us"] > 0
    assert m._credit.delay_cost > 0.0  # the executed moves were charged their delay
    with pytest.raises(ValueError, match="explore_moves"):
        type(m)(explore_moves=-1)
