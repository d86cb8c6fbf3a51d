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
* **Arms**: *fast* (the default: writes go where the placement sends them) and *around* (a write
  the placement sends to the device goes to the home device and asks for no cleaning; a rewrite of
  a page already there stays in place), compared by the mean latency of the busy epochs' requests
  (:class:`~hss_gym.agents.arms.EpochArms`: the better arm runs, the other is tried now and then
  while the tries cost under 2% of all requests' latency).

Shared by the reference agents and ``fit_first_ref``: nothing in it is a network.
"""

from __future__ import annotations

from typing import Any

from hss_gym.agents.arms import EpochArms
from hss_gym.backends.base import WRITE

#: the home device's busy fraction (an I/O in service) above which the arms are compared
BUSY: float = 0.5


class WriteBypass:
    """The bypass decision of one episode of ``env`` (an HSS env after its reset) for the devices
    in ``devices`` (each cleaned into the home device, an SSD); :attr:`around` is the current arm."""

    def __init__(self, env: Any, devices: list[int], epoch: int, budget: float = 0.02) -> None:
        self._env, self._core = env, env.hss.core
        self.devices = frozenset(devices)
        self._home = env.cfg.n_devices - 1
        self._arms = EpochArms(env, epoch, budget)
        self._t0, self._active0 = 0.0, 0.0  # the epoch's start: time, the home device's busy time

    @property
    def around(self) -> bool:
        """Whether writes to :attr:`devices` go to the home device now."""
        return self._arms.arm

    def skips(self, op: int, device: int, here: int) -> bool:
        """Whether a request ``op`` placed on ``device`` goes around it now: a write, not a rewrite
        in place (``here``: the page's device now)."""
        return self._arms.arm and op == WRITE and device in self.devices and device != here

    def __call__(self, step: int) -> None:
        """Account request ``step`` (placed now); closes an epoch every ``epoch`` requests."""
        arms = self._arms
        if not self.devices or not arms.due(step):
            return
        t, active = self._env.issue_time_us, self._core.active_us[self._home]
        busy = not arms.first and t > self._t0 and (active - self._active0) / (t - self._t0) > BUSY
        self._t0, self._active0 = t, active
        arms.close(step, busy)
