"""FleetIO's reference agent (PPO per vSSD) and the baselines of its §4.1.

A policy is created fresh per episode and follows the protocol every problem shares
(:class:`hss_gym.agents.base.BasePolicy`): ``reset(env, seed)``, ``act(observations, infos)``
from the env's per-vSSD observations and infos to per-vSSD actions, ``observe(observations,
rewards, infos)`` for learners. ``policy.env_options`` are the keyword arguments its environment
needs (the baselines are sharing schemes: ``isolation=`` ...). :func:`make_env` builds the env a
policy runs on and :func:`run_episode` plays one episode (both also through the front doors of
every problem: ``hss_gym.agents.make_policy("fleetio/<name>")``, ``hss_gym.agents.make_env(policy,
profile, mix)`` and ``hss_gym.agents.run_episode``).
"""

from hss_gym.agents.fleetio.baselines import (Adaptive, FleetIOPolicy, HardwareIsolation, SoftwareIsolation,
                                              SSDKeeper, make_env, run_episode)
from hss_gym.agents.fleetio.policy import PPOPolicy
from hss_gym.agents.fleetio.registry import POLICIES, make_policy


__all__ = ["POLICIES", "Adaptive", "FleetIOPolicy", "HardwareIsolation", "PPOPolicy",
           "SSDKeeper", "SoftwareIsolation", "make_env", "make_policy", "run_episode"]
