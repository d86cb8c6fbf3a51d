"""RLAlloc's policies by name: the baselines (:mod:`.baselines`, NumPy only) and the reference
DQN (:mod:`.dqn`), each created fresh per episode by :func:`make_policy`.

The registry is a module of its own because it names both: the DQN builds on the baselines
(their :class:`~.baselines.AllocPolicy` and scores), so the baselines cannot name it back. The
DQN needs PyTorch (the ``agents`` extra), so it is imported only when it is asked for.
"""

from __future__ import annotations

from typing import Any, Callable

from hss_gym.agents.models import model_format
from hss_gym.agents.rlalloc.baselines import (AllocPolicy, DemandPolicy, DynamicPolicy,
                                              ModelAllocPolicy, RandomPolicy, StaticPolicy)


POLICIES: dict[str, Callable[[], AllocPolicy]] = {
    "static": StaticPolicy, "dynamic": DynamicPolicy, "random": RandomPolicy, "demand": DemandPolicy,
}


def make_policy(name: str, **kwargs: Any) -> AllocPolicy:
    """A new policy by name: static, dynamic, random, demand, or rlalloc_dqn (needs PyTorch); or a
    trained model of ``hss/RLAlloc-v0``, ``"sb3:PATH.zip"``, ``"torch:PATH.pt"`` or ``"rllib:DIR"``
    (:class:`~.baselines.ModelAllocPolicy`)."""
    if model_format(name):
        if kwargs:
            raise ValueError(f"policy {name!r}: a trained model takes no options, got {sorted(kwargs)}")
        return ModelAllocPolicy(name)
    if name == "rlalloc_dqn":
        # local: the DQN needs PyTorch (the agents extra); the other RLAlloc policies do not
        from hss_gym.agents.rlalloc.dqn import DQNPolicy
        return DQNPolicy(**kwargs)
    if name not in POLICIES:
        raise ValueError(f"unknown RLAlloc policy {name!r}; valid: {', '.join([*POLICIES, 'rlalloc_dqn'])}, or a "
                         f"trained model: sb3:PATH.zip, torch:PATH.pt, rllib:DIR")
    return POLICIES[name](**kwargs)
