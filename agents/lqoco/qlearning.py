"""L-QoCo: tabular Q-learning for cache bandwidth control (DAC'22 §3), and its two ablations.

Online from scratch: a 36 x 5 Q table over the env's discrete states (``observation="discrete"``),
ε-greedy, one-step Q-learning update ``Q(s,a) += lr (r + γ max Q(s') - Q(s,a))``. Domain knowledge:

* safe actions (Table 3): in the two extreme states (High, High, Overuse) and (ExtremelyLow, Low,
  Underuse) the agent takes FastDecrease / FastIncrease instead of its policy and does not learn
  from that step. Table 3 prints "∨" between the conditions, while the text speaks of two extreme
  *states*. ``extreme="or"`` (default) follows the table as printed: any of High/High/Overuse
  decreases, else any of ExtremelyLow/Low/Underuse increases, which leaves few states to learning
  (those with W in {Low, Mid}, P = Mid, B = Fulluse); ``extreme="and"`` reads the conjunction (one
  state each), leaving 34 states to learning. docs/lqoco.md compares the two;
* fine tuning in Better states: the rate moves by ``fine`` (0.1%) against the watermark's trend
  (W fell: +, W rose: -); the step is learned as Keep.

Adaptive bound (Algorithm 1): a recommended I_t outside [lb, ub] is not executed (Keep is) and not
learned from. ``lb, ub`` start at ``bound`` x I_0; after ``N`` Better periods they re-centre on the
mean of the last N recommendations ± σ; repeated violations (V = (V - 1) δ + 1 > v) move the
violated bound to the previous recommendation.

``LQoCoDK`` drops the domain knowledge (safe actions, fine tuning); ``LQoCoAB`` the adaptive bound;
``LQoCoAnd`` reads Table 3 as a conjunction.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np

from hss_gym.agents.lqoco.base import ControlPolicy
from hss_gym.envs.lqoco.env import N_STATES, category, decode_state

KEEP, FAST_DEC, FAST_INC = 2, 1, 4


class AdaptiveBound:
    """Algorithm 1's state; :meth:`admit` returns whether a recommendation may be executed."""

    def __init__(self, rate: float, bound: tuple[float, float], n: int, v: float, sigma: float,
                 delta: float) -> None:
        self.lb, self.ub = rate * bound[0], rate * bound[1]
        self.n, self.v, self.sigma, self.delta = n, v, sigma, delta
        self.c_b = 0
        self.v_lb = self.v_ub = 0.0
        self.recent: deque[float] = deque(maxlen=n)

    def admit(self, rec: float, better: bool) -> bool:
        prev = self.recent[-1] if self.recent else rec
        self.recent.append(rec)
        if better:
            self.c_b += 1
        if rec > self.ub:
            self.v_ub = (self.v_ub - 1) * self.delta + 1
        if rec < self.lb:
            self.v_lb = (self.v_lb - 1) * self.delta + 1
        if self.c_b >= self.n:
            mean = sum(self.recent) / len(self.recent)
            self.lb, self.ub = mean * (1 - self.sigma), mean * (1 + self.sigma)
            self.c_b = 0
        if self.v_lb > self.v:
            self.lb, self.v_lb = prev, 0.0
        if self.v_ub > self.v:
            self.ub, self.v_ub = prev, 0.0
        return self.lb <= rec <= self.ub


class LQoCo(ControlPolicy):
    """The reference agent; see the module docstring."""

    name = "lqoco"
    learns = True
    domain_knowledge = True
    adaptive_bound = True

    def __init__(self, lr: float = 0.1, gamma: float = 0.9, epsilon: float = 0.1,
                 epsilon_min: float = 0.01, epsilon_decay: float = 0.995, fine: float = 0.001,
                 bound: tuple[float, float] = (0.5, 2.0), n_better: int = 20, v: float = 0.9,
                 sigma: float = 0.1, delta: float = 0.5, extreme: str = "or") -> None:
        if extreme not in ("and", "or"):
            raise ValueError(f"extreme must be 'and' or 'or' (Table 3's reading), got {extreme!r}")
        self.extreme = extreme
        if not (0 < lr <= 1 and 0 <= gamma < 1 and 0 <= epsilon_min <= epsilon <= 1):
            raise ValueError(f"need 0 < lr <= 1, 0 <= gamma < 1, 0 <= epsilon_min <= epsilon <= 1; "
                             f"got lr={lr}, gamma={gamma}, epsilon={epsilon}, epsilon_min={epsilon_min}")
        if not (0 < v < 1 and 0 < delta < 1):
            raise ValueError(f"adaptive bound needs 0 < v < 1 and 0 < delta < 1 (else V never "
                             f"crosses v), got v={v}, delta={delta}")
        self.lr, self.gamma = lr, gamma
        self.eps0, self.eps_min, self.eps_decay = epsilon, epsilon_min, epsilon_decay
        self.fine, self.bound_opts = fine, (tuple(bound), n_better, v, sigma, delta)
        self.q = np.zeros((N_STATES, 5))

    @property
    def q_table_bytes(self) -> int:
        return int(self.q.nbytes)

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        super().reset(env, seed)
        if self.env.obs_kind != "discrete":
            raise ValueError("L-QoCo needs the env's observation='discrete' (the 36 states)")
        self.rng = random.Random(seed)
        self.q[:] = 0.0  # the paper initialises the table for each workload
        self.eps = self.eps0
        self.mags = self.env.magnitudes
        self.bound: AdaptiveBound | None = None
        self.pending: tuple[int, int] | None = None
        self.prev_w: float | None = None
        self.q_list = self.q.tolist()

    def act(self, observations: Any, infos: dict[str, Any]) -> "int | float":
        s = int(observations)
        w, p, b = decode_state(s)
        rate, W = infos["rate_mbps"], infos["W"]
        prev_w, self.prev_w = self.prev_w, W
        self.pending = None
        if self.bound is None and self.adaptive_bound:
            lo_hi, n, v, sigma, delta = self.bound_opts
            self.bound = AdaptiveBound(rate, lo_hi, n, v, sigma, delta)
        if self.domain_knowledge:
            hi, lo = (w == 3, p == 2, b == 0), (w == 0, p == 0, b == 2)
            join = all if self.extreme == "and" else any
            if join(hi):
                return FAST_DEC
            if join(lo):
                return FAST_INC
        better = category(w, p, b) == "better"
        if self.domain_knowledge and better and prev_w is not None:
            self.pending = (s, KEEP)
            if self.bound is not None:
                self.bound.admit(rate, True)
            step = self.fine if W < prev_w else -self.fine if W > prev_w else 0.0
            return float(rate * (1 + step))
        row = self.q_list[s]
        if self.rng.random() < self.eps:
            a = self.rng.randrange(5)
        else:
            best = max(row)
            a = self.rng.choice([i for i in range(5) if row[i] == best])
        self.eps = max(self.eps_min, self.eps * self.eps_decay)
        if self.bound is not None and not self.bound.admit(rate * (1 + self.mags[a]), better):
            return KEEP  # not executed, not learned from
        self.pending = (s, a)
        return a

    def observe(self, observations: Any, rewards: float, infos: dict[str, Any]) -> None:
        """One-step Q-learning on the state and action of the last ``act`` (when it was learned
        from) and the next state ``observations``."""
        if self.pending is None:
            return
        s, a = self.pending
        row = self.q_list[s]
        target = rewards + self.gamma * max(self.q_list[int(observations)])
        row[a] += self.lr * (target - row[a])
        self.q[s, a] = row[a]


class LQoCoDK(LQoCo):
    """L-QoCo without domain knowledge (no safe actions, no fine tuning)."""

    name = "lqoco_dk"
    domain_knowledge = False


class LQoCoAB(LQoCo):
    """L-QoCo without the adaptive bound."""

    name = "lqoco_ab"
    adaptive_bound = False


class LQoCoAnd(LQoCo):
    """L-QoCo with Table 3 read as a conjunction: one extreme state each (34 states learned)."""

    name = "lqoco_and"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{"extreme": "and", **kwargs})
