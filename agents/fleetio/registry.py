"""FleetIO's policies by name: the baselines of §4.1 (:mod:`.baselines`) and the reference PPO
agents (:mod:`.policy`), each created fresh per episode by :func:`make_policy`.

The registry is a module of its own because it names both: the PPO policy builds on the
baselines' :class:`~.baselines.FleetIOPolicy`, so the baselines cannot name it back.
"""

from __future__ import annotations

from typing import Any

from hss_gym.agents.fleetio.baselines import (Adaptive, FleetIOPolicy, HardwareIsolation,
                                              SoftwareIsolation, SSDKeeper)
from hss_gym.agents.fleetio.policy import PPOPolicy


def _ppo() -> FleetIOPolicy:
    return PPOPolicy.load_default("fleetio_ppo")


def _ppo_local() -> FleetIOPolicy:
    """PPO trained with beta = 1 (each agent optimises only its own reward): the paper's
    FleetIO-Customized-Local ablation (§4.4, Fig. 15)."""
    return PPOPolicy.load_default("fleetio_ppo_local")


POLICIES = {"hardware_isolation": HardwareIsolation, "software_isolation": SoftwareIsolation,
            "adaptive": Adaptive, "ssdkeeper": SSDKeeper, "fleetio_ppo": _ppo,
            "fleetio_ppo_local": _ppo_local}


def make_policy(name: str, **kwargs: Any) -> FleetIOPolicy:
    """A new policy by name (:data:`POLICIES`), its factory called with ``kwargs``."""
    if name not in POLICIES:
        raise ValueError(f"unknown FleetIO policy {name!r}; valid: {', '.join(POLICIES)}")
    return POLICIES[name](**kwargs)
