"""Environments, one module per problem: the two-agent HSS PettingZoo env and the Gymnasium
single-agent HSS envs, FleetIO's multi-vSSD PettingZoo env, RLAlloc and L-QoCo."""
from hss_gym.envs.fleetio.env import FleetIOEnv
from hss_gym.envs.lqoco.env import LQoCoEnv
from hss_gym.envs.hss.env import HSSParallelEnv
from hss_gym.envs.rlalloc.env import RLAllocEnv, rlalloc_env
from hss_gym.envs.hss.single import SingleAgentEnv, migration_env, placement_env

__all__ = ["FleetIOEnv", "HSSParallelEnv", "LQoCoEnv", "RLAllocEnv", "rlalloc_env", "SingleAgentEnv",
           "migration_env", "placement_env"]
