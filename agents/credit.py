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

The table is C (``agents/page_credit.c``, in the ``_c51`` extension): an ended transition goes
straight into the agent's replay buffer, and every ``train_every`` transitions the agent's
``queue_step()`` runs, as :meth:`C51Agent.remember` does. The per-request bookkeeping then costs
no Python objects (it was a third of Harmonia's agent thread as Python dicts and lists). A
transition's arithmetic (double precision, in the order above) is that of the Python version it
replaced, bit for bit.

It is a semi-Markov view of the same MDP (rewards are unchanged: the papers' latency rewards), used
by the placement agents, :class:`hss_gym.agents.harmonia.PlacementAgent` and
:class:`hss_gym.agents.sibyl.Sibyl`, and by Harmonia's migration agent
(:class:`hss_gym.agents.harmonia.MigrationAgent`, which also ends a page's transition when the page
is rewritten: :meth:`PageCredit.end`) (docs/learning-diagnostics.md).
"""

from __future__ import annotations

from hss_gym.agents._c51 import MigrationCredit as _MigrationCredit
from hss_gym.agents._c51 import PageCredit as _PageCredit
from hss_gym.agents.c51 import C51Agent
from hss_gym.hss import PAGE_SHIFT as PAGE_SHIFT  # re-exported: harmonia.py imports it from here

EXPIRE_EVERY = 64


class PageCredit(_PageCredit):
    """Open per-page transitions of one C51 agent; see the module docstring.

    ``decision(page, obs, action, reward, step[, discount, tag])`` closes ``page``'s open
    transition (bootstrapping from ``obs`` with its accumulated discount) and opens a new one
    (discount ``gamma`` unless given; ``tag``, an int the caller may read back); ``access(page,
    reward)``, ``end(page)``, ``expire(step)`` as in the module docstring; ``charge(page, step,
    cost)`` subtracts ``cost`` from the return of ``page``'s transition if it was decided at
    ``step``; ``touch(first, last, reward, baselines)`` gives each open page of the range the
    access reward ``reward - max(baselines[tag], 0)`` (``reward=None``: ends them). ``page in
    credit``, ``len(credit)``, ``credit.get(page)`` (``(action, return, discount, step, tag)`` or
    None), ``credit.pages()`` and ``credit.idle_pages()`` (oldest decision first) inspect it.
    """

    def __init__(self, agent: C51Agent, horizon: int, idle_horizon: int | None = None) -> None:
        super().__init__(*_table_args(agent, horizon, idle_horizon))
        self.agent, self.gamma, self.horizon, self.idle_horizon = agent, agent.cfg.gamma, int(horizon), idle_horizon


class MigrationCredit(_MigrationCredit):
    """A :class:`PageCredit` table with Harmonia's migration agent's per-request bookkeeping
    (:class:`hss_gym.agents.harmonia.MigrationAgent`; C, ``agents/_c51_migration.c``).

    Each step: ``request(request, served[, page, obs, action, reward, device])`` before the env
    step (the env's request tuple or None, the device holding its first page, and the decision if
    the agent acted); ``placed(device, latency, evicted, step)`` with the placement's outcome;
    ``learned(step, latency)`` after it. ``read_reward`` (per device), ``evicted_at``,
    ``evict_cost``, ``fast_write`` and ``decided`` read the state these keep; the table's methods
    are :class:`PageCredit`'s.
    """

    def __init__(self, agent: C51Agent, horizon: int, ref_us: float, n_devices: int) -> None:
        super().__init__(*_table_args(agent, horizon, None), float(ref_us), int(n_devices))
        self.agent, self.gamma, self.horizon, self.idle_horizon = agent, agent.cfg.gamma, int(horizon), None


def _table_args(agent: C51Agent, horizon: int, idle_horizon: int | None) -> tuple:
    """The C table's arguments for ``agent``, checked (and the agent's reward clip widened)."""
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1 request, got {horizon}")
    if idle_horizon is not None and not 1 <= idle_horizon <= horizon:
        raise ValueError(f"idle_horizon must be in [1, horizon={horizon}] requests or None, got {idle_horizon}")
    cfg = agent.cfg
    agent.r_lo, agent.r_hi = cfg.v_min, cfg.v_max  # a return sums several discounted rewards
    return (agent.trainer, cfg.gamma, int(horizon), -1 if idle_horizon is None else int(idle_horizon),
            cfg.train_every, cfg.batch_size, agent.queue_step, EXPIRE_EVERY)
