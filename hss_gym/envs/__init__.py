"""Environments: the two-agent PettingZoo env and the Gymnasium single-agent envs (placement,
migration, L-QoCo cache-overload control)."""
from hss_gym.envs.lqoco import LQoCoEnv
from hss_gym.envs.parallel import HSSParallelEnv
from hss_gym.envs.single import SingleAgentEnv, migration_env, placement_env

__all__ = ["HSSParallelEnv", "LQoCoEnv", "SingleAgentEnv", "migration_env", "placement_env"]
