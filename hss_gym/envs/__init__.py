"""Environments: the two-agent PettingZoo env, the Gymnasium single-agent envs and FleetIO's
multi-vSSD PettingZoo env (``hss/FleetIO-v0``)."""
from hss_gym.envs.fleetio import FleetIOEnv
from hss_gym.envs.parallel import HSSParallelEnv
from hss_gym.envs.single import SingleAgentEnv, migration_env, placement_env

__all__ = ["FleetIOEnv", "HSSParallelEnv", "SingleAgentEnv", "migration_env", "placement_env"]
