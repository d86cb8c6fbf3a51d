"""FleetIO v0: :mod:`hss_gym.fleetio_v1`'s environment on the SSD of hss-gym 0.4.0-0.5.2 (PettingZoo).

::

    from hss_gym import fleetio_v0
    env = fleetio_v0.parallel_env(mix="mix4")     # the episodes fleetio_v0 gave, bit for bit

## Description
As :mod:`hss_gym.fleetio_v1`, on the flash profile ``fleetio-v0``: Table 3's SSD without program
or erase suspension (a read waits for the program or erase on its chip to end). Kept so that
results made with v0 re-run exactly; new work uses ``fleetio_v1``.

## Action Space
As ``fleetio_v1``: ``MultiDiscrete([17, 17, 3])`` per agent (harvest, make harvestable, priority).

## Observation Space
As ``fleetio_v1``: ``Box(0, 1, (33,), float32)``, Table 1's features of the last 3 windows.

## Rewards
As ``fleetio_v1``: eq. 1-2, ``beta`` = 0.6.

## Starting State
As ``fleetio_v1``.

## Episode End
As ``fleetio_v1``: truncation after ``windows`` decision windows.

## Arguments
As ``fleetio_v1``; ``profile`` defaults to ``"fleetio-v0"``.

* ``parallel_env(mix, ...)``: the :class:`~hss_gym.envs.fleetio.env.FleetIOEnv` on profile ``fleetio-v0``
  (``FleetIOEnv`` is exported here too);
* ``env(...)``: its AEC form, wrapped in ``OrderEnforcingWrapper``; ``raw_env(...)``: unwrapped;
* the tenants, as ``fleetio_v1``: ``MIXES``, ``workload_names``, ``get_workload``, ``trace_tenants``.

## Version History
* v0 (hss-gym 0.4.0): the environment of :mod:`hss_gym.fleetio_v1` before its SSD suspended
  programs and erases (hss-gym 0.5.2); this module pins that SSD.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from hss_gym.envs.fleetio.env import FleetIOEnv
from hss_gym.envs.fleetio.workloads import MIXES, get_workload, trace_tenants, workload_names

__all__ = ["env", "raw_env", "parallel_env", "FleetIOEnv", "MIXES", "get_workload", "trace_tenants", "workload_names"]

PROFILE = "fleetio-v0"


def parallel_env(mix: Any = "mix4", **kwargs: Any) -> FleetIOEnv:
    """A :class:`FleetIOEnv` on v0's SSD (profile ``fleetio-v0`` unless ``profile`` is given)."""
    return FleetIOEnv(mix, **{"profile": PROFILE, **kwargs})


def raw_env(*args: Any, **kwargs: Any) -> AECEnv:
    """``parallel_env(...)`` as an AEC env, without wrappers."""
    return parallel_to_aec_wrapper(parallel_env(*args, **kwargs))


def env(*args: Any, **kwargs: Any) -> AECEnv:
    """``raw_env(...)`` in PettingZoo's ``OrderEnforcingWrapper`` (the way to get the AEC env)."""
    return OrderEnforcingWrapper(raw_env(*args, **kwargs))
