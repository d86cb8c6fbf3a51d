"""The paper's baselines: no control, Bcache-style bypass, and OceanStor's CoTo (eq. 9-10)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import gymnasium as gym

from hss_gym.agents.lqoco.base import ControlPolicy


class NoControl(ControlPolicy):
    """No token limit: every write enters the cache (the paper's No-CoTo / No-bypass)."""

    name = "no_control"

    def act(self, observations: Any, infos: dict[str, Any]) -> float:
        return math.inf


class Bypass(ControlPolicy):
    """Bcache ``bypass``: no token limit, but a write whose wait for the cache would exceed
    ``threshold_us`` goes straight to the storage tier (Bcache's congested threshold, 20 ms)."""

    name = "bypass"
    env_options: ClassVar[dict[str, Any]] = {"bypass_us": 20_000.0}

    def act(self, observations: Any, infos: dict[str, Any]) -> float:
        return math.inf


class CoTo(ControlPolicy):
    """CoTo (eq. 9-10): ``I_{t+1} = (1 + α_t) I_t`` with S_t the watermark level (Low < ``low`` <=
    Mid < ``high`` <= High), α_t = (S_t - S_{t-1})/|S| * |I_t - O_t|/O_t on a level change, -r in
    High, +r in Low, 0 otherwise; r = 5% (the paper's best). Implemented as printed: the sign on a
    level change follows the watermark's direction."""

    name = "coto"

    def __init__(self, r: float = 0.05, low: float = 0.2, high: float = 0.8) -> None:
        if not 0 < r < 1 or not 0 < low < high < 1:
            raise ValueError(f"CoTo needs 0 < r < 1 and 0 < low < high < 1, got r={r}, low={low}, high={high}")
        self.r, self.low, self.high = r, low, high

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.prev: int | None = None

    def level(self, w: float) -> int:
        return 0 if w < self.low else 1 if w < self.high else 2

    def act(self, observations: Any, infos: dict[str, Any]) -> float:
        s = self.level(infos["W"])
        rate = infos["rate_mbps"]
        if self.prev is not None and s != self.prev:
            o = max(infos.get("flush_mbps", rate), 1e-9)
            alpha = (s - self.prev) / 3.0 * abs(infos.get("admitted_mbps", rate) - o) / o
        elif s == 2:
            alpha = -self.r
        elif s == 0:
            alpha = self.r
        else:
            alpha = 0.0
        self.prev = s
        return float(rate * (1.0 + alpha))
