"""Environments: the two-agent PettingZoo env and the Gymnasium single-agent envs."""
from hss_gym.envs.parallel import HSSParallelEnv

__all__ = ["HSSParallelEnv"]
