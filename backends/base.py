"""The backend interface: what the HSS core needs from the storage under it.

A backend owns the devices of one HSS (fastest first) and answers in microseconds of (simulated
or real) time. The HSS core maps each host request to runs of pages on devices, so a backend sees
only device-level I/O: ``io`` for a host read/write or one half of a migration, ``free_at`` to find
idle time for background migrations, and ``stats`` to report device state.

Two implementations: :class:`hss_gym.backends.sim.SimBackend` (default, the discrete-event model
of ``backends/simdev.c``) and the io_uring backend (real files or block devices).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

READ = 0
WRITE = 1


@runtime_checkable
class Backend(Protocol):
    """A set of block devices that serves page I/O and reports its state."""

    #: backend name, e.g. ``"sim"`` or ``"uring"``
    name: str

    @property
    def n_devices(self) -> int:
        """Number of devices; device 0 is the fastest."""

    def io(self, device: int, op: int, slot: int, npages: int, t: float,
           background: bool = False) -> float:
        """Issue one I/O of ``npages`` 4 KiB pages at page ``slot`` of ``device`` arriving at
        time ``t`` (µs); return its completion time (µs). ``background`` marks migration traffic."""

    def free_at(self, device: int) -> float:
        """Earliest time (µs) at which ``device`` can start a new I/O (idle-time detection)."""

    def reset(self, seed: int = 0) -> None:
        """Return to idle, empty devices; reseed any randomness."""

    def stats(self) -> list[dict[str, Any]]:
        """Per-device counters: I/Os, bytes, background (migration) traffic, busy time."""
