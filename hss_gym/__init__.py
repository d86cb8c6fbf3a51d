"""hss-gym: reinforcement-learning environments for data placement and migration in hybrid
storage systems.

* ``hss_gym.hss_v0`` — the two-agent PettingZoo env (placement + migration): ``hss_v0.parallel_env()``
  (also ``hss_gym.parallel_env()``), ``hss_v0.env()`` (AEC); PettingZoo envs are not in Gymnasium's
  registry, so it has no ``gymnasium.make`` id;
* ``gymnasium.make("hss/Placement-v0")`` / ``"hss/Migration-v0"`` — single-agent envs (without a
  prior ``import hss_gym``: ``gymnasium.make("hss_gym:hss/Placement-v0")``);
  ``gymnasium.make_vec(..., num_envs=N)`` gives N of them stepped in one C call
  (:mod:`hss_gym.envs.hss.vector`, which also batches the two-agent env);
* ``hss_gym.fleetio_v1.parallel_env()`` — vSSD bandwidth harvesting (FleetIO), one agent per vSSD;
* ``gymnasium.make("hss/RLAlloc-v0")`` / ``hss_gym.rlalloc_v0.env()`` — flash-chip allocation for the
  streams of a multi-streamed SSD;
* ``gymnasium.make("hss/LQoCo-v0")`` / ``hss_gym.lqoco_v0.env()`` — cache-overload control (L-QoCo);
  ``gymnasium.make_vec(..., num_envs=N)`` gives N of them stepped in one C call
  (:mod:`hss_gym.envs.lqoco.vector`);
* ``hss_gym.HSS`` — the simulated hybrid storage system itself;
* ``hss_gym.workloads`` — traces and the paper's synthetic workloads.
"""
from __future__ import annotations

from typing import Any

import gymnasium

from hss_gym import hss_v0
from hss_gym._version import __version__
from hss_gym.hss import HSS

__all__ = ["HSS", "parallel_env", "__version__"]


def parallel_env(config: Any = "perf_opt", workload: Any = "ycsb-b", backend: str = "sim", **options: Any):
    """The two-agent (placement + migration) PettingZoo environment of Harmonia: the same as
    ``hss_gym.hss_v0.parallel_env`` (see :mod:`hss_gym.hss_v0`)."""
    return hss_v0.parallel_env(config, workload, backend=backend, **options)


def _register() -> None:
    # vector_entry_point: gymnasium.make_vec's default for these ids, N envs stepped in one C call
    # (hss_gym/envs/hss/vector.py, hss_gym/envs/lqoco/vector.py); vectorization_mode="sync" or "async"
    # still gives Gymnasium's own.
    for env_id, entry, vector in (
            ("hss/Placement-v0", "hss_gym.envs.hss.single:placement_env", "hss_gym.envs.hss.vector:PlacementVectorEnv"),
            ("hss/Migration-v0", "hss_gym.envs.hss.single:migration_env", "hss_gym.envs.hss.vector:MigrationVectorEnv"),
            ("hss/RLAlloc-v0", "hss_gym.envs.rlalloc.env:rlalloc_env", None),
            ("hss/LQoCo-v0", "hss_gym.envs.lqoco.env:LQoCoEnv", "hss_gym.envs.lqoco.vector:LQoCoVectorEnv")):
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry, vector_entry_point=vector, disable_env_checker=True)


_register()
