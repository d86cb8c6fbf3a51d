"""Environments: the two-agent PettingZoo env and the Gymnasium single-agent envs."""
from hss_gym.envs.parallel import HSSParallelEnv
from hss_gym.envs.single import SingleAgentEnv, migration_env, placement_env

__all__ = ["HSSParallelEnv", "SingleAgentEnv", "migration_env", "placement_env"]
