"""Reference agents and baselines (``import hss_gym.agents``).

The policy protocol every problem shares (:class:`BasePolicy`), the HSS policy class, the episode
loop and the registry are in :mod:`hss_gym.agents.base`;
each policy lives in its own module (heuristics, archivist, ksvm, rnn_hss, sibyl, sapm,
harmonia, oracle) and is imported on demand, so nothing here needs torch.
"""

from hss_gym.agents.base import (POLICIES, BasePolicy, Combined, EpisodeResult, InvalidActionError,
                                 Policy, list_policies, load_factory, make_env, make_policy,
                                 run_episode, stay_action)

__all__ = ["POLICIES", "BasePolicy", "Combined", "EpisodeResult", "InvalidActionError", "Policy",
           "list_policies", "load_factory", "make_env", "make_policy", "run_episode", "stay_action"]
