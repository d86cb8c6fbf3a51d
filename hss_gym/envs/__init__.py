"""Environments, one sub-package per problem, each with its env in ``env.py`` (and the problem's own
workloads in ``workloads.py``; the HSS problem's are :mod:`hss_gym.workloads`): ``hss/`` (the
two-agent HSS PettingZoo env and the Gymnasium single-agent and vector HSS envs), ``fleetio/``
(FleetIO's multi-vSSD PettingZoo env), ``rlalloc/`` and ``lqoco/``; ``_contract.py`` is the
misuse contract the four share."""
from hss_gym.envs.fleetio.env import FleetIOEnv
from hss_gym.envs.hss.env import HSSParallelEnv
from hss_gym.envs.hss.single import SingleAgentEnv, migration_env, placement_env
from hss_gym.envs.lqoco.env import LQoCoEnv
from hss_gym.envs.rlalloc.env import RLAllocEnv, rlalloc_env

__all__ = ["FleetIOEnv", "HSSParallelEnv", "LQoCoEnv", "RLAllocEnv", "rlalloc_env", "SingleAgentEnv",
           "migration_env", "placement_env"]
