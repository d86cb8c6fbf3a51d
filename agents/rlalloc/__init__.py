"""RLAlloc's agents (``hss_gym.agents.rlalloc``): the baselines of the paper (Static, Dynamic),
Random and Demand (a hand-written chip-moving policy) in :mod:`.baselines` (NumPy only), and the
reference DQN in :mod:`.dqn` (PyTorch, extra ``agents``). Every policy follows
:class:`.baselines.AllocPolicy`; :func:`make_policy` (:mod:`.registry`) builds one by name and :func:`run_episode`
plays one episode of ``hss/RLAlloc-v0`` (``hss_gym.agents.make_env(policy, "rlalloc", workload)``
builds its env).
"""
from hss_gym.agents.rlalloc.baselines import (AllocPolicy, DemandPolicy, DynamicPolicy, RandomPolicy,
                                              StaticPolicy, run_episode)
from hss_gym.agents.rlalloc.registry import POLICIES, make_policy

__all__ = ["POLICIES", "AllocPolicy", "DemandPolicy", "DynamicPolicy", "RandomPolicy", "StaticPolicy",
           "make_policy", "run_episode"]
