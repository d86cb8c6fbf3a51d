"""Reference agents and baselines (``import hss_gym.agents``).

The policy interface, the episode loop and the registry are in :mod:`hss_gym.agents.base`;
each policy lives in its own module (heuristics, archivist, ksvm, rnn_hss, sibyl, sapm,
harmonia, oracle) and is imported on demand, so nothing here needs torch.
"""

from hss_gym.agents.base import (POLICIES, Combined, EpisodeResult, InvalidActionError, Policy,
                                 list_policies, load_factory, make_env, make_policy, run_episode,
                                 stay_action)

__all__ = ["POLICIES", "Combined", "EpisodeResult", "InvalidActionError", "Policy", "list_policies",
           "load_factory", "make_env", "make_policy", "run_episode", "stay_action"]
