"""Environments: the two-agent PettingZoo env and the Gymnasium single-agent envs."""
from hss_gym.envs.parallel import HSSParallelEnv
from hss_gym.envs.rlalloc import RLAllocEnv, rlalloc_env
from hss_gym.envs.single import SingleAgentEnv, migration_env, placement_env

__all__ = ["HSSParallelEnv", "RLAllocEnv", "rlalloc_env", "SingleAgentEnv", "migration_env", "placement_env"]
