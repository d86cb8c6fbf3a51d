"""The reference agents' write bypass (agents/bypass.py): a measured choice between writing to the
fast device and writing around it while the home SSD is busy all the time."""

from types import SimpleNamespace

import numpy as np
import pytest

from hss_gym.agents import make_policy
from hss_gym.agents.arms import TRY_EVERY, TRY_SHARE
from hss_gym.agents.bypass import WriteBypass
from hss_gym.agents.problems import make_env, run_episode
from hss_gym.backends.base import READ, WRITE
from hss_gym.workloads.trace import Trace

EPOCH = 100


class FakeEnv:
    """What WriteBypass reads: the home device's busy time, the issue time, the latencies."""

    def __init__(self, n: int) -> None:
        self.cfg = SimpleNamespace(n_devices=2)
        self.hss = SimpleNamespace(core=SimpleNamespace(active_us=[0.0, 0.0]))
        self._latencies = np.zeros(n)
        self.issue_time_us = 0.0
        self.step = 0

    def run(self, bypass: WriteBypass, n: int, busy: float, fast: float, around: float) -> None:
        """``n`` requests, each as long as its arm's latency, the home device busy that fraction of
        the time; the bypass sees every request."""
        for _ in range(n):
            lat = around if bypass.around else fast
            self._latencies[self.step] = lat
            self.step += 1
            self.issue_time_us += lat
            self.hss.core.active_us[1] += busy * lat
            bypass(self.step)


def arms(busy: float, fast: float, around: float, epochs: int, budget: float = 0.02) -> str:
    """The arm of each quarter epoch ("f" or "a")."""
    env = FakeEnv(epochs * EPOCH + 1)
    bypass = WriteBypass(env, [0], EPOCH, budget=budget)
    out = []
    for _ in range(epochs * TRY_SHARE):
        out.append("a" if bypass.around else "f")
        env.run(bypass, EPOCH // TRY_SHARE, busy, fast, around)
    return "".join(out)


def tries(got: str, arm: str) -> list[int]:
    return [i for i, a in enumerate(got) if a == arm]


def test_the_better_arm_runs_and_the_other_is_tried_ever_less_often():
    """Busy epochs: `fast` runs first; `around` is tried for a quarter epoch after TRY_EVERY busy
    epochs (the first epoch is the warm-up) and kept when it measures better. The other arm is tried
    again after 8 busy epochs when a try changed the choice, then after 16 and 32 while the tries
    confirm it (a budget of 1: every try affordable). Positions are in quarter epochs."""
    start = (1 + TRY_EVERY) * TRY_SHARE
    got = arms(busy=0.9, fast=10.0, around=5.0, epochs=120, budget=1.0)
    assert got[:start] == "f" * start and got[start:start + 30] == "a" * 30, got
    assert tries(got, "f")[start:] == [69, 134, 263, 392], got  # 1 + 8 * 4, 1 + 16 * 4, 1 + 32 * 4, ...
    got = arms(busy=0.9, fast=5.0, around=10.0, epochs=120, budget=1.0)
    assert tries(got, "a") == [start, 101, 230, 359], got


def test_nothing_changes_while_the_home_device_has_idle_time_and_tries_stay_in_budget():
    """Epochs with idle time at home run `fast` whatever was measured. A try that costs 4x the
    mean latency spends the budget (2% of all requests' latency so far): a try of 25 requests
    costing 100 is affordable once the latency so far is 50 times the tries' cost."""
    assert "a" not in arms(busy=0.4, fast=10.0, around=5.0, epochs=40)
    got = arms(busy=0.9, fast=1.0, around=5.0, epochs=200)
    assert tries(got, "a") == [36, 197, 394, 591, 788], got


def test_only_writes_to_the_devices_go_around_and_rewrites_stay_in_place():
    env = FakeEnv(1)
    bypass = WriteBypass(env, [0], EPOCH)
    assert not bypass.skips(WRITE, 0, 1)
    bypass._arms.arm = True  # the arm a bandit chose
    assert bypass.skips(WRITE, 0, 1) and not bypass.skips(READ, 0, 1) and not bypass.skips(WRITE, 0, 0)
    assert not bypass.skips(WRITE, 1, 0)


def saturated(m: int) -> Trace:
    """Requests all arrived at once (a closed loop, the home SSD never idle): half writes of 256 KiB,
    half reads of 64 KiB, at random in 80 MB."""
    rng = np.random.default_rng(0)
    op = (rng.random(m) < 0.5).astype(np.int8)
    size = np.where(op == 1, 64, 16) * 4096
    off = rng.integers(0, 20_000 // 64, m) * 64 * 4096
    return Trace(np.zeros(m), op, off.astype(np.int64), size.astype(np.int64), name="saturated")


def test_writes_go_around_a_fast_device_whose_cleaning_costs_more_than_it_gives():
    """On pmem (PMem over an Optane SSD), a saturated replay of large writes and reads is 1.22x
    slower than Slow-Only when every write goes to PMem (each is cleaned down again, and the reads
    at home queue behind the cleaning): `fit_first_ref` finds that writing around PMem is better,
    and keeps doing it. With the home device a disk (cost_opt) nothing changes."""
    trace = saturated(40_000)
    mean = {}
    for config in ("pmem", "cost_opt"):
        for name, policy in (("slow_only", make_policy("slow_only")), ("fit_first_ref", make_policy("fit_first_ref")),
                             ("no_bypass", make_policy("fit_first_ref"))):
            if name == "no_bypass":
                policy._setup = (lambda setup: lambda env: (setup(env), setattr(policy, "_bypass", None)))(policy._setup)
            env = make_env(policy, config, trace, n_requests=len(trace))
            run_episode(policy, env, seed=0)
            mean[config, name] = float(env.latencies().mean())
            if name == "fit_first_ref" and config == "pmem":
                assert policy._bypass.around and policy._bypass.devices == {0}
    assert mean["pmem", "no_bypass"] > 1.15 * mean["pmem", "slow_only"], mean
    assert mean["pmem", "fit_first_ref"] < 0.92 * mean["pmem", "no_bypass"], mean
    assert mean["cost_opt", "fit_first_ref"] == mean["cost_opt", "no_bypass"], mean


def test_bypass_needs_the_cleaner():
    from hss_gym.agents.harmonia import PlacementAgent
    with pytest.raises(ValueError, match="bypass needs the cleaner"):
        PlacementAgent(bypass=True)
