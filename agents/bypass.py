"""Writes around a fast device whose cleaning does not pay: measured, on an SSD-homed HSS.

A write sent to the fast device gains its own latency there, and that device must later be
cleaned into the home device, which then writes the same data. While the home device has idle
time the cleaning costs no request anything; while it is busy all the time (a saturated,
closed-loop replay), every cleaning chunk is work the reads at home queue behind. Whether the
write's gain or the cleaning's cost is larger depends on the workload: on some synthetic workloads
sending writes to the fast device made every request slower than doing nothing, on others it
halves the mean (measured in docs/learning-diagnostics.md). No datasheet sum tells them apart, so
this measures it, as a two-armed bandit over epochs:

* **Where**: a device cleaned into an SSD home (a disk home's writes cost a positioning each, and
  long write streams there have their own rules: :mod:`hss_gym.agents.streams`).
* **When**: epochs of ``2 * window`` requests (the cleaner's ``window``) in which the home device
  had an I/O in service more than half of the time (``HSS.active_us``). In the other epochs writes
  go where the placement sends them: idle time hides the cleaning.
* **Arms**: *fast* (writes go where the placement sends them) and *around* (a write the placement
  sends to the device goes to the home device and asks for no cleaning; a rewrite of a page already
  there stays in place). An arm's value is the mean latency of every request of its busy epochs, a
  running mean (each epoch weighs half).
* **Tries**: the better arm runs (at first, *fast*); the other one is tried for a quarter of an
  epoch after 8 busy epochs, then after twice as many each time a try confirms the choice (at most
  32), and after 8 again when it changes it; and only while what the tries cost (their mean
  latency above the better arm's, per request) is under ``budget`` (2%, the placement warm-up's
  ``explore_budget``) of all requests' latency so far.

Shared by the reference agents and ``fit_first_ref``: nothing in it is a network.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hss_gym.backends.base import WRITE

#: the home device's busy fraction (an I/O in service) above which the arms are compared
BUSY: float = 0.5
#: busy epochs between tries of the other arm: first, and at most
TRY_EVERY, TRY_EVERY_MAX = 8, 32
#: a try lasts this share of an epoch
TRY_SHARE: int = 4


class WriteBypass:
    """The bypass decision of one episode of ``env`` (an HSS env after its reset) for the devices
    in ``devices`` (each cleaned into the home device, an SSD); :attr:`around` is the current arm."""

    def __init__(self, env: Any, devices: list[int], epoch: int, budget: float = 0.02) -> None:
        self._env, self._core = env, env.hss.core
        self.devices = frozenset(devices)
        self.epoch, self.budget = int(epoch), float(budget)
        self._home = env.cfg.n_devices - 1
        #: whether writes to :attr:`devices` go to the home device now
        self.around = False
        self._best = False  # the arm with the lower value
        self._start, self._t0, self._active0 = 0, 0.0, 0.0
        self._value: list[float | None] = [None, None]  # per arm (fast, around): running mean latency
        self._trying = False  # whether the current epoch tries the other arm
        self._gap = self._next = TRY_EVERY  # busy epochs between tries; the busy epoch of the next try
        self._busy = 0  # busy epochs so far
        self._latency = self._cost = 0.0  # all requests' latency so far; what the tries cost above the best

    def skips(self, op: int, device: int, here: int) -> bool:
        """Whether a request ``op`` placed on ``device`` goes around it now: a write, not a rewrite
        in place (``here``: the page's device now)."""
        return self.around and op == WRITE and device in self.devices and device != here

    def __call__(self, step: int) -> None:
        """Account request ``step`` (placed now); closes an epoch every :attr:`epoch` requests."""
        if not self.devices or step - self._start < (self.epoch // TRY_SHARE if self._trying else self.epoch):
            return
        env = self._env
        t, active = env.issue_time_us, self._core.active_us[self._home]
        first = self._start == 0
        busy = not first and t > self._t0 and (active - self._active0) / (t - self._t0) > BUSY
        lat = env._latencies[self._start:step]
        mean = float(np.mean(lat))
        self._latency += mean * len(lat)
        self._start, self._t0, self._active0 = step, t, active
        if not busy:
            self.around = self._trying = False
            return
        arm = int(self.around)
        if self._trying:
            best = self._value[1 - arm]
            self._cost += max(0.0, mean - best) * len(lat) if best is not None else 0.0
        v = self._value[arm]
        self._value[arm] = mean if v is None else 0.5 * (v + mean)
        self._busy += 1
        fast, around = self._value
        best = around is not None and fast is not None and around < fast
        if self._trying:  # a try ended: back off when it confirmed the choice
            self._gap = min(TRY_EVERY_MAX, 2 * self._gap) if best == self._best else TRY_EVERY
            self._next = self._busy + self._gap
        self._best, self._trying = best, False
        if self._busy >= self._next and self._cost < self.budget * self._latency:
            self._trying, best = True, not best  # try the other arm for an epoch
        self.around = best
