"""The papers' combined techniques (Harmonia section 3.3), built with :class:`Combined`.

* ``sibyl+k_svm`` / ``sibyl+rnn_hss`` — Sibyl's RL placement with K-SVM's / RNN-HSS's periodic,
  critical-path migration: the naive combinations the paper shows to trail Sibyl alone;
* ``cde+rl_migr`` — CDE's heuristic placement with an RL migration agent trained on eq. 3 as published
  (Harmonia's migration agent before its per-page credit).
"""

from __future__ import annotations

from typing import Any

from hss_gym.agents.base import Combined


def sibyl_ksvm(seed: int = 0, **kwargs: Any) -> Combined:
    from hss_gym.agents.ksvm import KSVMMigration
    from hss_gym.agents.sibyl import Sibyl
    return Combined(Sibyl(seed=seed), KSVMMigration(seed=seed, **kwargs), name="sibyl+k_svm")


def sibyl_rnn_hss(seed: int = 0, **kwargs: Any) -> Combined:
    from hss_gym.agents.rnn_hss import RNNHSSMigration
    from hss_gym.agents.sibyl import Sibyl
    return Combined(Sibyl(seed=seed), RNNHSSMigration(seed=seed, **kwargs), name="sibyl+rnn_hss")


def cde_rl_migr(seed: int = 0, **kwargs: Any) -> Combined:
    from hss_gym.agents.harmonia import MigrationAgent
    from hss_gym.agents.heuristics import CDE
    # The RL migration agent as the papers compare it: eq. 3's system-level reward as published,
    # credited to the moves that earned it (the migration agent before per-page credit; Harmonia's
    # own agent judges moves per page and needs its placement agent's eviction reports).
    published = {"v_min": -1.0, "v_max": 2.0, "reward_scale": None, "train_every": 64}
    return Combined(CDE(**kwargs), MigrationAgent(published, seed=seed, credit="system"), name="cde+rl_migr")
