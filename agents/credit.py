"""Per-page credit: transitions that follow one page's accesses instead of the request stream.

A placement or migration decision about a page pays off when *that page* is accessed again (a hit
on the fast device, or a miss); the next request of the stream is almost always another page, whose
return does not depend on the decision. :class:`PageCredit` therefore keeps one open transition per
page, ``[obs, action, return, discount, step]``:

* a decision on page ``p`` closes ``p``'s open transition, bootstrapping from the new decision's
  observation with the accumulated discount ``gamma ** k`` (``k`` accesses later), and opens a new
  one whose return starts with the decision's own reward;
* an access of ``p`` that no decision handled adds its reward, discounted, to ``p``'s return;
* a transition still open ``horizon`` requests after its decision ends there: terminal (discount 0;
  the page was not used again within the horizon);
* optionally, a transition whose page has not been accessed at all ``idle_horizon`` requests after
  its decision ends there too (terminal). A page that is never used again (a scan) otherwise
  reports its outcome only ``horizon`` requests late, and the agent acts on values that much out
  of date: on a workload whose hot set moves, its first-touch placements oscillate
  (docs/learning-diagnostics.md). Pages re-accessed early keep the long horizon.

Expiry is checked every ``EXPIRE_EVERY`` requests (a transition may stay open up to that many
requests longer).

It is a semi-Markov view of the same MDP (rewards are unchanged: the papers' latency rewards), used
by the placement agents, :class:`hss_gym.agents.harmonia.PlacementAgent` and
:class:`hss_gym.agents.sibyl.Sibyl`, and by Harmonia's migration agent
(:class:`hss_gym.agents.harmonia.MigrationAgent`, which also ends a page's transition when the page
is rewritten: :meth:`PageCredit.end`) (docs/learning-diagnostics.md).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from hss_gym.agents.c51 import C51Agent

PAGE_SHIFT = 12  # 4 KiB pages: page = byte offset >> PAGE_SHIFT
EXPIRE_EVERY = 64


class PageCredit:
    """Open per-page transitions of one C51 agent; see the module docstring."""

    def __init__(self, agent: C51Agent, horizon: int, idle_horizon: int | None = None) -> None:
        if horizon < 1:
            raise ValueError(f"horizon must be >= 1 request, got {horizon}")
        if idle_horizon is not None and not 1 <= idle_horizon <= horizon:
            raise ValueError(f"idle_horizon must be in [1, horizon={horizon}] requests or None, got {idle_horizon}")
        self.agent, self.gamma, self.horizon = agent, agent.cfg.gamma, int(horizon)
        self.idle_horizon = idle_horizon
        self.open: OrderedDict[int, list[Any]] = OrderedDict()
        #: page -> decision step of the open transitions whose page was not accessed since (oldest first)
        self.idle: OrderedDict[int, int] | None = None if idle_horizon is None else OrderedDict()
        self.next_expiry = 0  # expire() has nothing to do before this step
        cfg = agent.cfg
        agent.r_lo, agent.r_hi = cfg.v_min, cfg.v_max  # a return sums several discounted rewards

    def decision(self, page: int, obs: np.ndarray, action: int, reward: float, step: int) -> None:
        t = self.open.pop(page, None)
        if t is not None:
            self.agent.remember(t[0], t[1], t[2], obs, t[3])
        self.open[page] = [obs, action, reward, self.gamma, step]
        if self.idle is not None:
            self.idle.pop(page, None)
            self.idle[page] = step

    def access(self, page: int, reward: float) -> None:
        t = self.open.get(page)
        if t is not None:
            t[2] += t[3] * reward
            t[3] *= self.gamma
            if self.idle is not None:
                self.idle.pop(page, None)

    def end(self, page: int) -> None:
        """Close ``page``'s open transition as terminal (its outcome no longer depends on the
        decision, e.g. the page was rewritten and placed anew)."""
        t = self.open.pop(page, None)
        if t is not None:
            self.agent.remember(t[0], t[1], t[2], t[0], 0.0)
            if self.idle is not None:
                self.idle.pop(page, None)

    def expire(self, step: int) -> None:
        if step < self.next_expiry:
            return
        self.next_expiry = step + EXPIRE_EVERY
        opened, remember, idle = self.open, self.agent.remember, self.idle
        if idle is not None:
            while idle:
                page, decided = next(iter(idle.items()))
                if step - decided < self.idle_horizon:
                    break
                del idle[page]
                t = opened.pop(page)
                remember(t[0], t[1], t[2], t[0], 0.0)
        while opened:
            first = next(iter(opened.values()))
            if step - first[4] < self.horizon:
                break
            page, t = opened.popitem(last=False)
            remember(t[0], t[1], t[2], t[0], 0.0)
            if idle is not None:
                idle.pop(page, None)
