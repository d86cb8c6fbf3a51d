"""Agents of the L-QoCo problem (DAC'22): the reference agent and the paper's baselines.

* ``lqoco`` — tabular Q-learning with safe actions, fine tuning and the adaptive bound
  (:mod:`.qlearning`); ``lqoco_dk`` without domain knowledge, ``lqoco_ab`` without adaptive bound,
  ``lqoco_and`` with Table 3's extreme states read as conjunctions;
* ``no_control`` (no token limit), ``bypass`` (Bcache-style: writes whose wait passes a latency
  threshold go to the storage tier), ``coto`` (OceanStor's state machine, eq. 9-10)
  (:mod:`.baselines`).

The policy interface (:mod:`.base`) and the episode loop :func:`run_episode` are small on purpose.
"""

from hss_gym.agents.lqoco.base import POLICIES, ControlPolicy, EpisodeOutcome, make_policy, run_episode

__all__ = ["POLICIES", "ControlPolicy", "EpisodeOutcome", "make_policy", "run_episode"]
