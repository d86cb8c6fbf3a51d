"""The storage below the environments, installed as ``hss_gym.backends``: every device model and
the native HSS core, importing nothing from the rest of ``hss_gym``.

* ``core/``: the HSS core in C (page table, LRU, migration queue, the env step's bookkeeping), the
  module ``hss_gym.backends._core`` that :class:`hss_gym.hss.HSS` wraps;
* :mod:`.base` (the backend interface), :mod:`.sim` and ``simdev.c`` (the simulated devices, the
  default), :mod:`.real` and ``uring/`` (real files or block devices through io_uring);
* :mod:`.flash`: the flash SSD model of FleetIO and RLAlloc;
* :mod:`.lqoco`: L-QoCo's cache tier and storage tier.
"""
from hss_gym.backends.base import Backend
from hss_gym.backends.sim import DeviceProfile, SimBackend, builtin_profiles, load_profile

__all__ = ["Backend", "DeviceProfile", "SimBackend", "builtin_profiles", "load_profile"]
