"""hss-gym: reinforcement-learning environments for data placement and migration in hybrid
storage systems.

* ``hss_gym.hss_v0`` — the two-agent PettingZoo env (placement + migration): ``hss_v0.parallel_env()``
  (also ``hss_gym.parallel_env()``), ``hss_v0.env()`` (AEC); PettingZoo envs are not in Gymnasium's
  registry, so it has no ``gymnasium.make`` id;
* ``gymnasium.make("hss/Placement-v0")`` / ``"hss/Migration-v0"`` — single-agent envs (without a
  prior ``import hss_gym``: ``gymnasium.make("hss_gym:hss/Placement-v0")``);
* ``hss_gym.fleetio_v1.parallel_env()`` — vSSD bandwidth harvesting (FleetIO), one agent per vSSD;
* ``gymnasium.make("hss/RLAlloc-v0")`` / ``hss_gym.rlalloc_v0.env()`` — flash-chip allocation for the
  streams of a multi-streamed SSD;
* ``gymnasium.make("hss/LQoCo-v0")`` / ``hss_gym.lqoco_v0.env()`` — cache-overload control (L-QoCo);
* ``hss_gym.HSS`` — the simulated hybrid storage system itself;
* ``hss_gym.workloads`` — traces and the paper's synthetic workloads.
"""
from __future__ import annotations

__version__ = "0.6.0"  # first: submodules record it in provenance while the package imports

from typing import Any  # noqa: E402

import gymnasium  # noqa: E402

from hss_gym.hss import HSS  # noqa: E402
__all__ = ["HSS", "parallel_env", "__version__"]


def parallel_env(config: Any = "perf_opt", workload: Any = "ycsb-b", backend: str = "sim", **options: Any):
    """The two-agent (placement + migration) PettingZoo environment of Harmonia: the same as
    ``hss_gym.hss_v0.parallel_env`` (see :mod:`hss_gym.hss_v0`)."""
    from hss_gym import hss_v0
    return hss_v0.parallel_env(config, workload, backend=backend, **options)


def _register() -> None:
    for env_id, entry in (("hss/Placement-v0", "hss_gym.envs.single:placement_env"),
                          ("hss/Migration-v0", "hss_gym.envs.single:migration_env"),
                          ("hss/RLAlloc-v0", "hss_gym.envs.rlalloc:rlalloc_env"),
                          ("hss/LQoCo-v0", "hss_gym.envs.lqoco:LQoCoEnv")):
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry, disable_env_checker=True)


_register()
