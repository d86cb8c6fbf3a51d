"""Two ways of acting, compared by what they measurably cost: a two-armed bandit over epochs.

Some choices of the reference agents' parts have no datasheet answer: whether writes should go
around a fast device whose cleaning competes with the reads at a busy home SSD
(:mod:`hss_gym.agents.bypass`), or whether a long write stream that overflows the fast device of a
disk-homed HSS should have room made for it (:mod:`hss_gym.agents.streams`). Both depend on the
workload, and both show in the latency of the requests around them, so :class:`EpochArms` measures
them:

* **Epochs** of ``epoch`` requests. Only the epochs the caller *judges* (those in which the choice
  matters: the home busy, a long stream written) compare the arms; after the others the default
  arm (``False``) runs, or with ``keep`` the better one.
* **Arms**: the default (``False``) and the alternative (``True``). An arm's value is the mean
  latency of every request of its judged epochs, a running mean (each epoch weighs half).
* **Tries**: the better arm runs (at first the default); the other one is tried for a quarter of
  an epoch after 8 judged epochs, then after twice as many each time a try confirms the choice (at
  most 32), and after 8 again when it changes it; and only while what the tries cost (their mean
  latency above the better arm's, per request) is under ``budget`` (2%, the placement warm-up's
  ``explore_budget``) of all requests' latency so far.

Nothing in it is a network: the reference agents and ``fit_first_ref`` share it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: judged epochs between tries of the other arm: first, and at most
TRY_EVERY, TRY_EVERY_MAX = 8, 32
#: a try lasts this share of an epoch
TRY_SHARE: int = 4


class EpochArms:
    """The arm of one episode of ``env`` (an HSS env after its reset): :attr:`arm` is the current
    one (``False``: the default); the caller closes epochs with :meth:`close` when :meth:`due`."""

    def __init__(self, env: Any, epoch: int, budget: float = 0.02, keep: bool = False) -> None:
        self._env = env
        self.epoch, self.budget, self.keep = int(epoch), float(budget), bool(keep)
        #: the arm running now (False: the default)
        self.arm = False
        self._best = False  # the arm with the lower value
        self._start = 0  # the epoch's first request
        self._value: list[float | None] = [None, None]  # per arm: running mean latency
        self._trying = False  # whether the current epoch tries the other arm
        self._gap = self._next = TRY_EVERY  # judged epochs between tries; the judged epoch of the next try
        self._judged = 0  # judged epochs so far
        self._latency = self._cost = 0.0  # all requests' latency so far; what the tries cost above the best

    @property
    def first(self) -> bool:
        """Whether the epoch running now is the episode's first."""
        return self._start == 0

    def due(self, step: int) -> bool:
        """Whether the epoch running now ends before request ``step`` (placed now)."""
        return step - self._start >= (self.epoch // TRY_SHARE if self._trying else self.epoch)

    def close(self, step: int, judged: bool) -> None:
        """End the epoch before request ``step``; ``judged``: whether it compares the arms."""
        lat = self._env._latencies[self._start:step]
        mean = float(np.mean(lat))
        self._latency += mean * len(lat)
        self._start = step
        if not judged:
            self.arm = self._best if self.keep else False
            self._trying = False
            return
        arm = int(self.arm)
        if self._trying:
            best = self._value[1 - arm]
            self._cost += max(0.0, mean - best) * len(lat) if best is not None else 0.0
        v = self._value[arm]
        self._value[arm] = mean if v is None else 0.5 * (v + mean)
        self._judged += 1
        default, other = self._value
        best = other is not None and default is not None and other < default
        if self._trying:  # a try ended: back off when it confirmed the choice
            self._gap = min(TRY_EVERY_MAX, 2 * self._gap) if best == self._best else TRY_EVERY
            self._next = self._judged + self._gap
        self._best, self._trying = best, False
        if self._judged >= self._next and self._cost < self.budget * self._latency:
            self._trying, best = True, not best  # try the other arm for an epoch
        self.arm = best
