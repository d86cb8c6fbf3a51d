"""SAPM (Harmonia section 3.3): a Single Agent for Placement and Migration.

One C51 agent (Harmonia's features and network, the placement agent's Table-2 hyper-parameters)
makes both decisions: it places every write and first touch, and judges the scanner's migration
candidate **only when the system is idle** (every device free when the request arrives), so that
migration never competes with placement on the critical path. Both kinds of experience go into its
single replay buffer: placements with their immediate reward (eq. 2), migrations with the delayed,
credited reward (eq. 3). The paper uses SAPM to show that one agent cannot learn two tasks with
different objectives at once; it is expected to trail Sibyl.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from hss_gym.agents.base import Infos, Obs, Policy
from hss_gym.agents.c51 import C51Agent, C51Config
from hss_gym.agents.c51 import make_config
from hss_gym.agents.harmonia import PLACEMENT_DEFAULTS
from hss_gym.envs.hss.env import HSSParallelEnv


class SAPM(Policy):
    """One C51 agent for both tasks; see the module docstring."""

    name = "sapm"
    learns = True

    def __init__(self, config: "C51Config | dict[str, Any] | None" = None, seed: int = 0,
                 train: bool = True) -> None:
        self.cfg = make_config(PLACEMENT_DEFAULTS, config)
        self.seed = seed
        self.learns = train  # type: ignore[misc]
        self.agent: C51Agent | None = None

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        n_inputs = env.observation_space("placement").shape[0]
        n_actions = int(env.action_space("placement").n)
        if self.agent is None:
            self.agent = C51Agent(n_inputs, n_actions, self.cfg, self.seed)
        elif (self.agent.n_inputs, self.agent.n_actions) != (n_inputs, n_actions):
            raise ValueError(f"sapm was trained with {self.agent.n_inputs} features and {self.agent.n_actions} "
                             f"devices; this environment has {n_inputs} and {n_actions}")
        self.free_at = env.hss.backend.devices.free_at
        self.n = n_actions
        self._place: tuple[np.ndarray, int] | None = None
        self._move: tuple[np.ndarray, int, int] | None = None
        self._moves: dict[int, tuple[np.ndarray, int, np.ndarray]] = {}

    def _idle(self) -> bool:
        """Every device free when the request is issued (a loop: cheaper than ``all`` of a
        generator, and this runs on most steps)."""
        t, free_at = self.env.issue_time_us, self.free_at
        for d in range(self.n):
            if not free_at(d) <= t:
                return False
        return True

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        self._place = self._move = None
        place, mi = 0, infos["migration"]
        move = max(mi["device"], 0)
        if infos["placement"]["acting"]:
            obs = observations["placement"]
            place = self.agent.act(obs)
            self._place = (obs, place)
        if mi["acting"] and self._idle():
            obs = observations["migration"]
            a = self.agent.act(obs)
            if a != mi["device"]:
                move = a
                self._move = (obs, a, mi["step"])
        return {"placement": place, "migration": move}

    def observe(self, observations: Obs, rewards: dict[str, float], infos: Infos) -> None:
        agent = self.agent
        if self._place is not None:
            agent.remember(*self._place, rewards["placement"], observations["placement"])
        if self._move is not None:
            obs, a, step = self._move
            self._moves[step] = (obs, a, observations["migration"])
            if len(self._moves) > 4096:
                del self._moves[next(iter(self._moves))]
        for s in infos["migration"]["credit"]:
            t = self._moves.pop(s, None)
            if t is not None:
                agent.remember(t[0], t[1], rewards["migration"], t[2])
        agent.tick()
