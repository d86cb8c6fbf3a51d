"""The papers' combined techniques (Harmonia section 3.3), built with :class:`Combined`.

* ``sibyl+k_svm`` / ``sibyl+rnn_hss`` — Sibyl's RL placement with K-SVM's / RNN-HSS's periodic,
  critical-path migration: the naive combinations the paper shows to trail Sibyl alone (defined
  beside their migration, :func:`hss_gym.agents.ksvm.sibyl_ksvm` and
  :func:`hss_gym.agents.rnn_hss.sibyl_rnn_hss`, so that scikit-learn and torch stay in those modules);
* ``cde+rl_migr`` — CDE's heuristic placement with an RL migration agent trained on eq. 3 as published
  (Harmonia's migration agent before its per-page credit).
"""

from __future__ import annotations

from typing import Any

from hss_gym.agents.base import Combined
from hss_gym.agents.harmonia import MigrationAgent
from hss_gym.agents.heuristics import CDE


def cde_rl_migr(seed: int = 0, **kwargs: Any) -> Combined:
    # The RL migration agent as the papers compare it: eq. 3's system-level reward as published,
    # credited to the moves that earned it (the migration agent before per-page credit; Harmonia's
    # own agent judges moves per page and needs its placement agent's eviction reports).
    published = {"v_min": -1.0, "v_max": 2.0, "reward_scale": None, "train_every": 64}
    return Combined(CDE(**kwargs), MigrationAgent(published, seed=seed, credit="system"), name="cde+rl_migr")
