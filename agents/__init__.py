"""Reference agents and baselines (``import hss_gym.agents``).

The policy protocol every problem shares (:class:`BasePolicy`) and the HSS policy class are in
:mod:`hss_gym.agents.protocol`, the episode loop and the registry in :mod:`hss_gym.agents.base`
(which re-exports the protocol);
each policy lives in its own module (heuristics, archivist, ksvm, rnn_hss, sibyl, sapm,
harmonia, oracle) and is imported on demand, so nothing here needs torch. A trained model plays
as ``make_policy("sb3:PATH.zip")`` or ``"torch:PATH.pt"`` (:mod:`hss_gym.agents.models`; its
model card: :func:`save_model_card`).
"""

from hss_gym.agents.base import (POLICIES, BasePolicy, Combined, EpisodeResult, InvalidActionError,
                                 Policy, list_policies, load_factory, make_env, make_policy,
                                 run_episode, stay_action)
from hss_gym.agents.models import save_model_card

__all__ = ["POLICIES", "BasePolicy", "Combined", "EpisodeResult", "InvalidActionError", "Policy",
           "list_policies", "load_factory", "make_env", "make_policy", "run_episode", "save_model_card", "stay_action"]
