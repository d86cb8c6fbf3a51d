"""Harmonia (Nadig et al., arXiv 2503.20507): two autonomous C51 agents, one placing, one migrating.

* :class:`PlacementAgent` places each write and first touch. Reward: the environment's immediate
  ``L_ref / L_t`` (Harmonia eq. 2), credited per page (:mod:`hss_gym.agents.credit`): the
  transition runs from a placement to the page's next placement, collecting the rewards of the
  page's accesses in between (``credit="request"``: the plain ``(s_t, a_t, r_t, s_{t+1})``).
* :class:`MigrationAgent` judges the scanner's candidate page each step (the environment's action
  is the target device; its current device means "stay"). Default ``credit="page"``: a move is
  judged against staying, on its own page (eq. 3's penalty, the measured cost of the eviction it
  saves or causes, its later reads against the device it left); a stay is worth 0, and an
  untried move is valued below it, so an untrained agent stays. ``credit="system"``: the
  environment's delayed eq. 3 as published, credited to ``infos["migration"]["credit"]`` (moves
  and stays then earn the same; docs/learning-diagnostics.md).
* :class:`Harmonia` runs both. Both agents use the network 7-10-(N x 51) with swish and the Table 2
  hyper-parameters (placement: gamma 0.9, lr 1e-3 (3e-3 here), batch 128; migration: gamma 0.1, lr 1e-2,
  batch 256; epsilon 0.001, replay of 1000 each), all overridable, and learn online from scratch
  as in the paper (see :mod:`hss_gym.agents.c51` for the learner and what it simplifies). The
  placement agent adds an exploration warm-up and a gradient step every 8 experiences, the
  migration agent the support [-2, 1], unscaled rewards and a step every 4 experiences (see
  PLACEMENT_DEFAULTS, MIGRATION_DEFAULTS and docs/learning-diagnostics.md). Pretrained weights:
  :mod:`hss_gym.agents.pretrain`.

Policies: ``harmonia_paper`` is :class:`Harmonia` as published (placements evict on the critical
path). ``harmonia``, the reference, is :func:`harmonia` (:data:`REFERENCE`): placements
that never evict on the critical path, a :class:`~hss_gym.agents.cleaner.Cleaner` making room in
idle time in a learned victim order, writes placed from the ``fit_first`` rule as a prior, and a
wider placement network; each deviation and its measured effect: docs/learning-diagnostics.md.

``Harmonia.save(path)`` / ``Harmonia(weights=path)`` store and restore both agents; loading weights
made for another number of devices or features is refused with the reason. ``loss_curves()`` gives
each agent's training loss per gradient step (paper Fig. 7).
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any, Callable

import numpy as np

from hss_gym.agents.base import Combined, Infos, Obs, Policy, overridden
from hss_gym.agents.bypass import WriteBypass
from hss_gym.agents.c51 import C51Agent, C51Config, load_state, make_config, save_state
from hss_gym.agents.cleaner import READAHEAD_PAGES, Cleaner
from hss_gym.agents.credit import PAGE_SHIFT, MigrationCredit, PageCredit
from hss_gym.agents.streams import WriteStreams
from hss_gym.backends.base import READ, WRITE
from hss_gym.envs.hss.env import HSSParallelEnv
from hss_gym.envs.hss.features import feature_names


#: Harmonia Table 2. Return ranges: placement rewards are in (0, ~1] with gamma 0.9 (returns <= 10);
#: a move's return against staying is in ~[-2, 1] with gamma 0.1 (MigrationAgent), unscaled.
#: Deviations, each measured in docs/learning-diagnostics.md: placement lr 3e-3 (Table 2: 1e-3,
#: too slow for the 7-10-102 network); epsilon falling from 1 to 0.001 over the first
#: ``explore_steps`` decisions (the paper's "random initial decisions"); a gradient step every
#: ``train_every`` experiences (the paper trains continuously in a background thread). Migration:
#: the support [-2, 1] (an untried move is valued below a stay), unscaled rewards (eq.-2
#: differences, already O(1)) and a gradient step every 4 of its moves; see MigrationAgent.
PLACEMENT_DEFAULTS = C51Config(hidden=(10,), gamma=0.9, lr=3e-3, epsilon=0.001, batch_size=128,
                               buffer_size=1000, v_min=0.0, v_max=10.0, explore_steps=1000, train_every=8)
MIGRATION_DEFAULTS = C51Config(hidden=(10,), gamma=0.1, lr=1e-2, epsilon=0.001, batch_size=256,
                               buffer_size=1000, v_min=-2.0, v_max=1.0, reward_scale=1.0, train_every=4)


class _C51Policy(Policy):
    """A policy around one C51 agent, built when the first environment shows its sizes."""

    learns = True
    defaults = PLACEMENT_DEFAULTS

    def __init__(self, config: "C51Config | dict[str, Any] | None" = None, seed: int = 0,
                 train: bool = True) -> None:
        self.cfg = make_config(self.defaults, config)
        self.seed = seed
        self.learns = train  # type: ignore[misc]
        self.agent: C51Agent | None = None
        self._pending_state: tuple[dict[str, Any], str] | None = None

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        agent_name = self.agents[0]
        n_inputs = env.observation_space(agent_name).shape[0]
        n_actions = int(env.action_space(agent_name).n)
        if env.raw_bins:
            raise ValueError(f"{self.name} needs scaled Box observations; create the env with raw_bins=False")
        if self.agent is None:
            self.agent = C51Agent(n_inputs, n_actions, self.cfg, self.seed)
            if self._pending_state is not None:
                self.agent.load_state_dict(*self._pending_state)
        elif (self.agent.n_inputs, self.agent.n_actions) != (n_inputs, n_actions):
            raise ValueError(f"{self.name} was trained with {self.agent.n_inputs} features and "
                             f"{self.agent.n_actions} devices; this environment has {n_inputs} and {n_actions}")

    def load_state(self, state: dict[str, Any], source: str) -> None:
        if self.agent is None:
            self._pending_state = (state, source)
        else:
            self.agent.load_state_dict(state, source)

    @property
    def loss_curve(self) -> list[tuple[int, float]]:
        return [] if self.agent is None else self.agent.loss_curve


class PlacementAgent(_C51Policy):
    """Harmonia's data-placement agent (immediate reward), with per-page credit by default.

    ``credit="page"`` (default): a placement's transition runs along the placed page's own
    accesses, not along the interleaved request stream. Its reward is the eq.-2 reward of the
    request it placed plus the discounted eq.-2 rewards of the page's later accesses that no
    decision of this agent handled (reads served where the placement put the page), and it
    bootstraps from the page's next placement decision with discount ``gamma ** k`` (k accesses
    later); a page not decided on again within ``horizon`` requests ends its transition there
    (terminal). The next request of the stream is usually another page, whose return does not
    depend on this placement, so with ``credit="request"`` (the plain transition
    ``(s_t, a_t, r_t, s_{t+1})``) a placement sees only its own request's latency and never the
    hits it earns later (docs/learning-diagnostics.md).

    ``evict`` (True, the papers' agent): whether a placement may evict on the critical path.
    ``evict=False`` (the reference agents; needs the env option ``room_feature="binary"``, which
    :attr:`env_options` asks for, or ``"fits"``): a choice of a device the request does not fit in
    (its free-space feature is 0: placing there would first move that device's LRU pages down, in
    the request's latency) becomes the next slower device where it fits, or the page's own device
    for a rewrite in place; the agent learns from the device it got. With ``"binary"`` the
    free-space features say only whether the request fits (0 or 1), not how much room is left:
    the cleaner holds the fast device near its target (2% free) for most of a run, a fraction
    the agent hardly saw while it explored an emptier device, and with the free fraction in its
    observation it learned to send rewrites of fast-resident pages to the slow device in those
    states, each then paying a disk access. On real traces the critical-path evictions were where
    the agents lost to Slow-Only; a page then reaches a full fast device through the migration
    agent, whose moves run in idle time (both measured in docs/learning-diagnostics.md).

    ``clean`` (None: off; the reference ``harmonia`` and ``sibyl``: 0.02): a :class:`Cleaner`
    keeping that fraction of a faster device free in idle time while this agent's choices are sent
    past it; needs ``evict=False``. ``victims`` and ``readahead`` are the cleaner's. ``streams``
    (False; the reference agents: True; needs ``clean``): on an HSS whose home device is a disk, a
    long sequential write stream asks for no cleaning and leaves a slower middle device for the
    disk (:mod:`hss_gym.agents.streams`). ``bypass`` (False; the reference agents: True; needs
    ``clean``): on an HSS whose home device is an SSD, writes go around the fast device while
    measured epochs say its cleaning costs more than it gives (:mod:`hss_gym.agents.bypass`).

    ``seq_explore`` (False; the reference agents: True): during the exploration warm-up, a request
    that continues the previous one (its offset is where that one ended) takes the previous
    request's choice, so a random choice is made once per sequential run. Random choices per
    request split a sequential stream between the devices (on a disk every piece then costs a
    seek), which made the reference agents slower than Slow-Only on a short sequential trace
    explored entirely in the warm-up (measured in docs/learning-diagnostics.md).

    ``first_reads`` ("place", the papers' environment contract; the reference agents: "home"):
    who places a page first touched by a read. With "home" the agent places writes only, as
    Harmonia's placement agent does (§4.2: it "receives the state features of incoming write
    requests"): a read of data never seen before is served where that data already is, the home
    device, and is not a decision. Placing it on a faster device is a prefetch whose only gain is
    later re-reads, while it fills the device and makes the cleaner move pages; the immediate
    reward (the read is served from home either way) cannot tell the two choices apart, so the
    agents placed such reads on the fast device at random and the cleaning slowed every request
    (measured in docs/learning-diagnostics.md).

    ``prior`` (None: the network alone decides; the reference agents: ``"fit"``): the agent starts
    from the ``fit_first`` rule (:mod:`hss_gym.agents.rules`: the fastest device the request fits
    on). Its exploration warm-up (the config's ``explore_steps`` decisions) takes the rule's device
    or, with probability ``deviate``, another one at random (``deviate=None``: the network's
    epsilon warm-up, uniform choices). Afterwards it takes the network's device only where the
    network expects more than ``margin`` (in return units) above the device the rule ends on. A
    uniform warm-up sent half of the first writes to the slow device, which was most of the
    learners' gap to the rule, and with a small margin the network's optimistic values for rarely
    tried devices sent writes there (docs/learning-diagnostics.md).

    ``explore_budget`` (None: no limit; the reference agents: 0.02): the warm-up leaves the rule
    (a new deviation, or the continuation of a sequential run that deviated) only while what its
    deviations cost, their latency above the rule's running mean, is below that fraction of all
    requests' latency so far. A fixed number of deviations cost most where the rule is best: on a
    short write-only trace, a hundred writes sent to a disk at milliseconds each, against a rule
    serving writes in tens of microseconds, made the agents tens of percent slower than the rule.
    ``min_tries`` (0; the reference agents: 64): after the warm-up, the network's device is taken
    only when the agent has chosen it, and placed there, at least that many requests; its values
    for devices it hardly tried are guesses (docs/learning-diagnostics.md). Requests the room check
    sent there (their choice did not fit) do not count: they were placed in other states (a
    full faster device), so they say nothing of the device where the choice was free.

    ``idle_horizon`` (50 requests; None: off): a placement whose page is not accessed at all within
    that many requests ends there too (terminal, its own reward). Without it a page never used
    again (a scan) reports its outcome ``horizon`` requests late; when the hot set moves, the
    agent's first-touch placements then oscillate between fast and slow with that delay
    (measured in docs/learning-diagnostics.md, "the learning rate and the idle horizon").
    """

    name = "harmonia_placement"
    agents = ("placement",)

    def __init__(self, config: "C51Config | dict[str, Any] | None" = None, seed: int = 0,
                 train: bool = True, credit: str = "page", horizon: int = 2000,
                 idle_horizon: int | None = 50, evict: bool = True, clean: float | None = None,
                 seq_explore: bool = False, first_reads: str = "place", prior: str | None = None,
                 deviate: float = 0.1, margin: float = 0.1, explore_budget: float | None = None,
                 min_tries: int = 0, victims: str = "lru", readahead: int = 0, streams: bool = False,
                 bypass: bool = False) -> None:
        super().__init__(config, seed, train)
        if prior not in (None, "fit"):
            raise ValueError(f"prior must be None or 'fit', got {prior!r}")
        if prior is not None and evict:
            raise ValueError("prior='fit' needs placements that do not evict (evict=False)")
        if (deviate is not None and not 0.0 <= deviate <= 1.0) or margin < 0.0:
            raise ValueError(f"need 0 <= deviate <= 1 and margin >= 0; got {deviate}, {margin}")
        if (explore_budget is not None and explore_budget < 0.0) or min_tries < 0:
            raise ValueError(f"need explore_budget >= 0 (or None) and min_tries >= 0; got {explore_budget}, {min_tries}")
        self.explore_budget, self.min_tries = explore_budget, int(min_tries)
        #: the rule the agent starts from and deviates from (None: the network alone decides)
        self.prior, self.deviate, self.margin = prior, None if deviate is None else float(deviate), float(margin)
        if prior is not None and deviate is not None:  # the warm-up explores around the rule
            self._explore_left = self.cfg.explore_steps if train else 0  # once per agent, as the network's
            self._rng = np.random.default_rng([seed, 0x51B])
            self.cfg = C51Config(**{**self.cfg.__dict__, "explore_steps": 0})
        else:  # the network's epsilon warm-up (uniform choices), then the rule as the default
            self._explore_left = 0
        if clean is not None and evict:
            raise ValueError("clean needs placements that do not evict (evict=False)")
        for option in ("streams",) * streams + ("bypass",) * bypass:
            if clean is None:
                raise ValueError(f"{option} needs the cleaner (clean=...)")
        self.streams, self.bypass = bool(streams), bool(bypass)
        if first_reads not in ("place", "home"):
            raise ValueError(f"first_reads must be 'place' or 'home', got {first_reads!r}")
        self.evict, self.seq_explore, self.first_reads = bool(evict), bool(seq_explore), first_reads
        self.cleaner = Cleaner(clean, victims=victims, readahead=readahead) if clean is not None else None
        if not self.evict:  # it reads "does the request fit" from the free-space features
            self.env_options = {**type(self).env_options, "room_feature": "binary"}  # type: ignore[misc]
        if credit not in ("page", "request"):
            raise ValueError(f"credit must be 'page' or 'request', got {credit!r}")
        if horizon < 1:
            raise ValueError(f"horizon must be >= 1 request, got {horizon}")
        if idle_horizon is not None and not 1 <= idle_horizon <= horizon:
            raise ValueError(f"idle_horizon must be in [1, horizon={horizon}] requests or None, got {idle_horizon}")
        self.credit, self.horizon, self.idle_horizon = credit, int(horizon), idle_horizon

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self._setup(env)

    def _setup(self, env: HSSParallelEnv) -> None:
        """The per-episode state of the placement logic around the network (room, credit, cleaner)."""
        self._last: tuple[np.ndarray, int] | None = None
        self._page = -1
        self._ref = env.reward_ref_us
        self._credit = (PageCredit(self.agent, self.horizon, self.idle_horizon)
                        if self.credit == "page" and self.learns else None)
        if not self.evict and getattr(env, "room_feature", "fraction") not in ("binary", "fits"):
            raise ValueError(f"{self.name} with evict=False needs the env option room_feature='binary' "
                             f"or 'fits' (make_env(policy, ...) sets it)")
        names = feature_names(env.cfg.n_devices, env.kind)
        #: observation index of each non-home device's free space (0.0: the request does not fit)
        self._room = [names.index("fast_cap")] + [names.index(f"free_{d}") for d in range(1, env.cfg.n_devices - 1)
                                                  if f"free_{d}" in names]
        self._at, self._top = names.index("curr_dev"), env.cfg.n_devices - 1
        self._reads_home = self.first_reads == "home"
        n = env.cfg.n_devices
        self.wanted_at = [-(1 << 30)] * n  # per device, the step of the last write sent past it (full)
        self._run_end, self._run_choice = -1, 0  # the sequential run of the last decision, its choice
        self._tries = [0] * n  # per device, the placements the agent chose there (and that fit)
        self._deviated = False  # whether the last decision left the rule's device
        self._lat_sum = self._dev_cost = 0.0  # all requests' latency; what deviations cost above the rule's
        self._rule_lat = 0.0  # running mean latency of the placements that followed the rule
        if self.cleaner is not None:
            self.cleaner.reset(env)
        self._streams = WriteStreams(env, 2 * self.cleaner.window) if self.streams else None  # type: ignore[union-attr]
        self._bypass = (WriteBypass(env, self.cleaner.into_ssd_home, 2 * self.cleaner.window)  # type: ignore[union-attr]
                        if self.bypass else None)

    def load_state(self, state: dict[str, Any], source: str) -> None:
        super().load_state(state, source)
        if self.prior is not None:  # trained weights: no warm-up, as the network's epsilon has none
            self._explore_left = 0

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        return {"placement": self.decide(observations["placement"], infos["placement"])}

    def observe(self, observations: Obs, rewards: dict[str, float], infos: Infos) -> None:
        self.learn(observations["placement"], rewards["placement"], infos["placement"])

    def decide(self, obs: np.ndarray, info: dict[str, Any]) -> int:
        return self._decide(obs, info["acting"], self.env.request)

    def learn(self, next_obs: np.ndarray, reward: float, info: dict[str, Any]) -> None:
        self._learn(next_obs, reward, info["step"], info["latency_us"], info.get("evicted", 0))
        self.agent.tick()

    def _decide(self, obs: np.ndarray, acting: bool, request: tuple[float, int, int, int]) -> int:
        """:meth:`decide` on what it reads: ``infos["placement"]["acting"]`` and ``env.request``."""
        if self._credit is not None:
            self._page = request[2] >> PAGE_SHIFT
        if self._bypass is not None:
            self._bypass(self.env.step_index)
        if self._streams is not None:
            self._streams.tick(self.env.step_index)
        if not acting or (request[1] == READ and self._reads_home):
            self._last = None
            if self.cleaner is not None:
                self.cleaner(self.env.step_index, self.wanted_at)
            return self._top if acting else 0
        exploring = self._exploring
        a = self._choose(obs)
        if exploring and self.seq_explore:
            if request[2] == self._run_end:  # continues the last request: one choice for the run
                a = self._run_choice
            self._run_end, self._run_choice = request[2] + request[3], a
        chosen = a
        if not self.evict:  # a device the request does not fit: the next slower one
            a = self._fit(obs, a)
            streams, step, home = self._streams, self.env.step_index, False
            long = streams is not None and request[1] == WRITE and streams.write(request[2], request[3]) \
                and streams.ruled  # type: ignore[union-attr]
            if long:  # a long write stream on a disk-homed HSS
                home = streams.home()  # type: ignore[union-attr]
                a = self._top if home else a
                streams.placed(step, a, request[3])  # type: ignore[union-attr]
            bypass, here = self._bypass, int(obs[self._at] * self._top + 0.5)
            around = bypass is not None and bypass.skips(request[1], a, here)
            a = self._top if around else a
            if a != chosen and not self._exploring and not (long and a == self._top) and not around:
                self.wanted_at[chosen] = step  # a greedy choice wanted it
            if self.prior is not None:
                rule = self._fit(obs, 0)
                self._deviated = a != (self._top if home or (bypass and bypass.skips(request[1], rule, here)) else rule)
        if a == chosen:  # the agent's choice, not the room check's
            self._tries[a] += 1
        if self.cleaner is not None:
            self.cleaner(self.env.step_index, self.wanted_at)
        self._last = (obs, a)
        return a

    def _choose(self, obs: np.ndarray) -> int:
        """The device chosen for ``obs``, before the room check moves it to a device where the
        request fits: the network's (epsilon-greedy), or with ``prior="fit"`` the rule's (the
        fastest device; the room check takes it to the fastest one it fits) unless the network
        expects another device to return more than ``margin`` above the device the rule ends on;
        during the warm-up, the rule's device or, with probability ``deviate``, another one at
        random (one choice per sequential run with ``seq_explore``)."""
        if self.prior is None or (self.deviate is None and self.agent.exploring):
            return self.agent.act(obs)
        rule = self._fit(obs, 0)
        if self._explore_left:
            self._explore_left -= 1
            req = self.env.request
            if self.seq_explore and req[2] == self._run_end:
                a = self._run_choice if self._run_choice == 0 or self._affordable else 0
            elif self._rng.random() < self.deviate and self._affordable:
                a = int(self._rng.integers(0, self.agent.n_actions - 1))
                a += a >= rule  # any device but the rule's
            else:
                a = 0
            self._run_end, self._run_choice = req[2] + req[3], a
            return a
        q = self.agent.q_values(obs)
        best = max(range(len(q)), key=q.__getitem__)
        return best if best != rule and q[best] > q[rule] + self.margin and self._tries[best] >= self.min_tries else 0

    @property
    def _affordable(self) -> bool:
        """Whether the warm-up may (still) leave the rule: what its deviations cost above the
        rule's running mean latency is below ``explore_budget`` of all requests' latency so far."""
        return self.explore_budget is None or self._dev_cost < self.explore_budget * self._lat_sum

    def _fit(self, obs: np.ndarray, a: int) -> int:
        """Where a choice of device ``a`` ends without evictions: the first device from ``a`` on
        that the request fits, or the page's own device for a rewrite in place."""
        room, here = self._room, int(obs[self._at] * self._top + 0.5)
        while a < len(room) and a != here and obs[room[a]] == 0.0:
            a += 1
        return a

    @property
    def _exploring(self) -> bool:
        """Whether the network is in its exploration warm-up (its choices are not greedy). With a
        prior explored around, the rule's choices are the greedy ones from the start (they ask the
        cleaner for room)."""
        return (self.prior is None or self.deviate is None) and self.agent.exploring

    def _learn(self, next_obs: np.ndarray, reward: float, step: int, latency: float, evicted: int) -> None:
        """:meth:`learn` on what it reads from ``infos["placement"]``: ``step``, ``latency_us``
        and ``evicted`` (unused here; Sibyl's reward penalises it); the caller ticks the agent."""
        agent, credit, last = self.agent, self._credit, self._last
        if self.explore_budget is not None:
            self._lat_sum += latency
            if last is not None:
                if self._deviated:
                    self._dev_cost += latency - self._rule_lat
                else:
                    self._rule_lat += 0.01 * (latency - self._rule_lat)
        if credit is None:
            if last is not None:
                agent.remember(last[0], last[1], reward, next_obs)
        else:
            if last is not None:
                credit.decision(self._page, last[0], last[1], reward, step)
            elif latency > 0:
                credit.access(self._page, self._ref / latency)
            if step >= credit.next_expiry:
                credit.expire(step)

    def run_fast(self, env: HSSParallelEnv, observations: Obs, infos: Infos,
                 callback: Callable[[int], None] | None = None) -> int | None:
        """:meth:`act`/:meth:`observe` (the migration agent staying) on ``env.fast_step``."""
        if overridden(self, PlacementAgent, ("act", "observe", "decide", "learn")):
            return None
        obs, acting, dev = observations["placement"], infos["placement"]["acting"], infos["migration"]["device"]
        decide, learn, step, learns, reqs = self._decide, self._learn, env.fast_step, self.learns, env.requests
        agent = self.agent
        n, i, k = 0, env.step_index, 0
        due = agent.until_sync() if learns else 0  # ticks counted here, given at each refresh
        while True:
            place = decide(obs, acting, reqs[i])
            obs, _, reward, _, latency, evicted, _, _, _, done, acting, _, dev = step(place, dev if dev >= 0 else 0)
            n, i = n + 1, i + 1
            if learns:
                learn(obs, reward, i, latency, evicted)
                k += 1
                if k == due or done:
                    agent.tick(k)
                    k, due = 0, agent.until_sync()
            if callback is not None and n % 10_000 == 0:
                callback(n)
            if done:
                return n


class MigrationAgent(_C51Policy):
    """Harmonia's data-migration agent: judges the scanner's candidate page each step.

    ``credit="page"`` (default; docs/learning-diagnostics.md has the measurements behind each part):

    * **relative actions**: action 0 stays, action ``k`` moves the page to device
      ``(curr_dev + k) mod N`` (the environment still receives the target device);
    * **a stay is worth 0** (the counterfactual baseline): the agent moves a page only when the
      best move's expected return is positive; stays are not stored (as in the paper, where a
      page whose target is its own device is not a candidate). The support [-2, 1] puts an
      untried move at about -0.5, so an untrained agent stays (from a random network with
      epsilon 0.001 the old agent moved pages to the wrong device until training caught up);
    * **per-page credit of a move**, against staying: ``-P`` (eq. 3's penalty
      ``penalty * (1/acc_intr + 1/migr_intr)`` of the page); plus or minus the measured cost of one
      critical-path eviction (in eq.-2 reward, from the placements that evicted against those
      that did not) when the move frees or takes a slot of the fast device while it is evicting,
      minus it when the migration queue is full (the oldest move then runs at once, competing
      with host I/O); plus, for each later read of the moved page, the discounted difference
      between its eq.-2 reward ``L_ref / L`` and the mean eq.-2 reward of reads served by the
      device it left. A write ends the transition (the placement agent places the page anew), so
      do ``horizon`` requests and the page's next migration decision (terminal).
    * exploration: Table 2's epsilon; ``explore_steps`` (0 by default) adds a warm-up from 1 that
      starts once the fast device first evicts (before that, no move has anything to show).

    Opt-in, all off by default here and on in :class:`Harmonia` (:data:`HARMONIA_MIGRATION`; measured
    in docs/learning-diagnostics.md):
    ``explore_moves``/``explore_rate`` (a budget of random moves tried with that probability, only
    into an empty migration queue, once the fast device evicts), ``learn_start`` (train from that
    many moves instead of a full batch), ``idle_only`` (greedy moves only into an empty queue),
    ``evicting_only`` (moves only while the fast device evicts) and ``move_delay``: charge each
    executed move what it delayed host I/O (the environment's ``infos["migration"]
    ["move_delay_us"]``) converted to eq.-2 reward (see ``_charge_delay``), and pause the
    exploration budget while the running mean of that charge exceeds the measured eviction cost
    (the most a background move saves besides its reads).

    The environment's system-level eq.-3 reward pays the moves and the stays of one period all but
    the same (docs/learning-diagnostics.md), so it cannot tell the agent which page to move.

    ``credit="system"``: the environment's eq.-3 reward as published, credited to the moves in
    ``infos["migration"]["credit"]`` and shared by the latest ``x`` stays before it (transition
    ``(s_t, a_t, r_delayed, s_{t+1})``, ``s_{t+1}`` the next candidate's observation; actions are
    target devices; use the support [-1, 2] and ``reward_scale=None``, as the published agent).
    """

    name = "harmonia_migration"
    agents = ("migration",)
    defaults = MIGRATION_DEFAULTS

    def __init__(self, config: "C51Config | dict[str, Any] | None" = None, seed: int = 0,
                 train: bool = True, max_pending: int = 4096, credit: str = "page", horizon: int = 500,
                 explore_moves: int = 0, explore_rate: float = 0.1, learn_start: int | None = None,
                 idle_only: bool = False, evicting_only: bool = False, move_delay: bool = False) -> None:
        super().__init__(config, seed, train)
        if credit not in ("page", "system"):
            raise ValueError(f"credit must be 'page' or 'system', got {credit!r}")
        if horizon < 1:
            raise ValueError(f"horizon must be >= 1 request, got {horizon}")
        learn_start = self.cfg.batch_size if learn_start is None else learn_start
        if explore_moves < 0 or not 0.0 <= explore_rate <= 1.0 or learn_start < 1:
            raise ValueError(f"need explore_moves >= 0, 0 <= explore_rate <= 1 and learn_start >= 1; got "
                             f"{explore_moves}, {explore_rate}, {learn_start}")
        self.max_pending, self.credit, self.horizon = max_pending, credit, int(horizon)
        self.explore_moves, self.explore_rate, self.learn_start = int(explore_moves), float(explore_rate), int(learn_start)
        self.idle_only, self.evicting_only, self.move_delay = bool(idle_only), bool(evicting_only), bool(move_delay)
        self._credit: MigrationCredit | None = None

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        if self.agent is None:  # exploration (if any) once per agent, none with loaded weights
            self._explore_left = 0 if self._pending_state is not None else self.cfg.explore_steps
            self._idle_left = 0 if self._pending_state is not None or not self.learns else self.explore_moves
        elif self._credit is not None:  # the budgets the last episode left
            self._explore_left, self._idle_left = self._credit.explore_left, self._credit.idle_left
        super().reset(env, seed)
        self._last: tuple[np.ndarray, int, int] | None = None  # obs, action, step (moves only)
        self._last_stay: tuple[np.ndarray, int] | None = None
        self._moves: dict[int, tuple[np.ndarray, int, np.ndarray]] = {}
        self._stays: deque[tuple[np.ndarray, int, np.ndarray]] = deque(maxlen=env.reward_x)
        self._ref, self._penalty, self._n = env.reward_ref_us, env.penalty, int(env.action_space("migration").n)
        self._reward_n = env.reward_n
        self._warm = True  # the replay holds less than a batch (it only grows)
        self._rng = np.random.default_rng(self.seed)
        self._queued: dict[int, int] = {}  # env step of a move decision -> its page (move_delay)
        self._credit = None
        if self.credit == "page":
            # The per-request choice and bookkeeping (a request, its decision, their outcome: the
            # read rewards per device, the eviction cost, the running delay cost of a move) are C:
            # agents/_c51_migration.c, with this agent's draws and its move reward (_move_reward).
            self._credit = credit = MigrationCredit(self.agent, self.horizon, self._ref, self._n)
            cfg = self.cfg
            credit.setup(self.agent.infer, self._rng.bit_generator, self._rng.integers, self._move_reward,
                         cfg.epsilon, cfg.explore_steps, self._explore_left, self._idle_left, self.explore_rate,
                         self.evicting_only, self.idle_only, self.move_delay, env.reward_n,
                         feature_names(self._n, env.kind).index("curr_dev"))

    def load_state(self, state: dict[str, Any], source: str) -> None:
        super().load_state(state, source)
        self._explore_left = self._idle_left = 0
        if self._credit is not None:
            self._credit.explore_left = self._credit.idle_left = 0

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        return {"migration": self.decide(observations["migration"], infos["migration"], observations.get("placement"))}

    def observe(self, observations: Obs, rewards: dict[str, float], infos: Infos) -> None:
        self.learn(observations["migration"], rewards["migration"], infos["migration"],
                   infos["placement"]["latency_us"])

    def placed(self, device: int, latency: float, evicted: int) -> None:
        """The placement of this step (device, latency, pages evicted): measures what one
        critical-path eviction costs in eq.-2 reward, against fast placements that evicted none
        (``MigrationCredit.placed``). :class:`Harmonia` calls it; without it (another placement
        policy) that cost stays 0."""
        if self._credit is not None:
            self._credit.placed(device, latency, evicted, self.env.step_index)

    def decide(self, obs: np.ndarray, info: dict[str, Any], placement_obs: np.ndarray | None = None) -> int:
        return self._decide(obs, info["acting"], info["page"], info["device"], info["step"], placement_obs,
                            self.env.request)

    def _decide(self, obs: np.ndarray, acting: bool, page: int, dev: int, step: int,
                placement_obs: np.ndarray | None, request: tuple[float, int, int, int]) -> int:
        """:meth:`decide` on what it reads from ``infos["migration"]`` and ``env.request``."""
        self._last = self._last_stay = None
        if self._credit is None:
            if not acting:
                return max(dev, 0)
            a = self.agent.act(obs)
            if a == dev:
                self._last_stay = (obs, a)
            else:
                self._last = (obs, a, step)
            return a
        target = self._credit.decide(obs, acting, page, dev, step, placement_obs, request,
                                     self.env.hss.core.queue_length)
        if acting and target != dev and self.move_delay:
            queued = self._queued
            queued[step] = page
            if len(queued) > self.max_pending:  # moves the env did not queue never run
                del queued[next(iter(queued))]
        return target

    def _move_reward(self, page: int, step: int, dev: int, target: int) -> float:
        """The immediate part of a move's reward, against staying: -P (eq. 3's penalty), and one
        critical-path eviction (its measured cost in eq.-2 reward) saved when the move frees a
        slot of the full fast device, or caused when it takes one or when the migration queue is
        full (the oldest queued move then runs at once, competing with host I/O)."""
        hss = self.env.hss
        pg = hss.page(page)
        now = step + 1
        reward = -self._penalty * (1.0 / max(now - pg["last_access"], 1) + 1.0 / max(now - pg["last_move"], 1))
        e = self._credit.evict_cost
        if now - self._credit.evicted_at <= self._reward_n:  # the fast device is evicting: it is full
            reward += e if dev == 0 else -e if target == 0 else 0.0
        if hss.core.queue_length >= hss.config.queue_size:
            reward -= e
        return reward

    def learn(self, nxt: np.ndarray, r: float, info: dict[str, Any], latency: float = 0.0) -> None:
        self._learn(nxt, r, info["step"], latency, info.get("executed", []), info.get("move_delay_us", 0.0),
                    info.get("credit", []))
        self.agent.tick()

    def _learn(self, nxt: np.ndarray, r: float, step: int, latency: float, executed: list[int], delay_us: float,
               credit_steps: list[int]) -> None:
        """:meth:`learn` on what it reads from ``infos["migration"]`` (``step``, ``executed``,
        ``move_delay_us``, ``credit``) and the request's latency; the caller ticks the agent."""
        credit = self._credit
        if credit is not None:
            warm = self._warm
            if warm:
                trainer = self.agent.trainer
                before = trainer.experiences
            credit.learned(step, latency)
            if executed and self.move_delay:
                self._charge_delay(executed, delay_us)
            if warm:
                size, agent = trainer.size, self.agent
                if size >= agent.cfg.batch_size:
                    self._warm = False
                elif self.learn_start <= size:  # train before the replay holds a batch
                    for _ in range(trainer.experiences - before):
                        agent.queue_step()
            return
        if self._last is not None:
            obs, a, at = self._last
            moves = self._moves
            moves[at] = (obs, a, nxt)
            if len(moves) > self.max_pending:  # moves dropped by the env are never credited
                del moves[next(iter(moves))]
        elif self._last_stay is not None:
            self._stays.append((*self._last_stay, nxt))
        if credit_steps:
            agent = self.agent
            for s in credit_steps:
                t = self._moves.pop(s, None)
                if t is not None:
                    agent.remember(t[0], t[1], r, t[2])
            while self._stays:
                obs, a, n = self._stays.popleft()
                agent.remember(obs, a, r, n)

    def _charge_delay(self, executed: list[int], delay_us: float) -> None:
        """Charge the moves executed this step what they delayed host I/O (the environment's
        ``move_delay_us``, shared equally among them), in eq.-2 reward: what a fast-device write
        (``L = L_ref / f``, ``f`` its running eq.-2 reward, as for the eviction cost) loses when
        delayed by ``D``: ``f - L_ref / (L_ref / f + D)``, in [0, f). Immediate (undiscounted),
        like the eviction terms; a move whose transition has closed (its page rewritten) is not
        charged."""
        share = delay_us / len(executed)
        f = self._credit.fast_write
        f = f if f > 0 else 1.0
        cost = f - self._ref / (self._ref / f + share) if share > 0 else 0.0
        credit, queued = self._credit, self._queued
        credit.delay_cost += 0.1 * (cost - credit.delay_cost) * len(executed)
        for s in executed:
            page = queued.pop(s, None)
            if page is not None:
                credit.charge(page, s + 1, cost)  # the agent's decision step is the env's + 1


#: How Harmonia runs its migration agent (docs/learning-diagnostics.md, "migration delay"): a
#: budget of 100 exploratory moves (probability 0.1 per candidate, only into an empty migration
#: queue and only while the fast device evicts), training from 16 stored moves, greedy moves only
#: into an empty queue while the fast device evicts, and each executed move charged what it
#: delayed host I/O. Against the agent without them they make the perf_opt cells faster and leave
#: the cost_opt cells within their seeds' spread (measured in docs/learning-diagnostics.md, where
#: the adoption is recorded). They need the placement agent's eviction reports
#: (``MigrationAgent.placed``), which only Harmonia gives, so a bare MigrationAgent (e.g. in
#: ``cde+rl_migr``) keeps its plain defaults.
HARMONIA_MIGRATION = dict(explore_moves=100, explore_rate=0.1, learn_start=16, idle_only=True,
                          evicting_only=True, move_delay=True)


class Harmonia(Combined):
    """Both agents together: Harmonia. See the module docstring and HARMONIA_MIGRATION.

    The defaults are the agents as published (``harmonia_paper``); the reference ``harmonia`` is
    :func:`harmonia`. ``options`` are :class:`PlacementAgent`'s (``evict``, ``clean``, ...); with
    ``evict=False`` the migration agent is also told when the fast device is full."""

    name = "harmonia"

    def __init__(self, placement: "C51Config | dict[str, Any] | None" = None,
                 migration: "C51Config | dict[str, Any] | None" = None, seed: int = 0,
                 train: bool = True, weights: "str | Path | None" = None, **options: Any) -> None:
        super().__init__(PlacementAgent(placement, seed, train, **options),
                         MigrationAgent(migration, seed + 1, train, **HARMONIA_MIGRATION), name="harmonia")
        if weights is not None:
            self.load(weights)

    # The two agents' act/observe without the intermediate dicts (the per-request hot path).
    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        return {"placement": self.placement.decide(observations["placement"], infos["placement"]),
                "migration": self.migration.decide(observations["migration"], infos["migration"],
                                                   observations["placement"])}

    def observe(self, observations: Obs, rewards: dict[str, float], infos: Infos) -> None:
        if self.placement.learns:
            self.placement.learn(observations["placement"], rewards["placement"], infos["placement"])
        if self.migration.learns:
            p = infos["placement"]
            last = self.placement._last
            if last is not None:
                self.migration.placed(last[1], p["latency_us"], p["evicted"])
                self._full(observations["placement"])
            self.migration.learn(observations["migration"], rewards["migration"], infos["migration"], p["latency_us"])

    def _full(self, obs_p: np.ndarray) -> None:
        """Tell the migration agent that the fast device is full (the placement's free-space
        feature is 0: the request did not fit). Its moves wait for an evicting fast device
        (``evicting_only``); a placement agent that never evicts (``evict=False``) reports a full
        one instead, so the moves that bring pages into it still happen (in idle time)."""
        credit = self.migration._credit
        if not self.placement.evict and credit is not None and obs_p[self.placement._room[0]] == 0.0:
            credit.evicted_at = self.env.step_index

    def run_fast(self, env: HSSParallelEnv, observations: Obs, infos: Infos,
                 callback: Callable[[int], None] | None = None) -> int | None:
        """:meth:`act`/:meth:`observe` on ``env.fast_step`` (the per-request hot path)."""
        if overridden(self, Harmonia, ("act", "observe")):
            return None
        pl, mg = self.placement, self.migration
        obs_p, obs_m = observations["placement"], observations["migration"]
        acting, page, dev = infos["placement"]["acting"], infos["migration"]["page"], infos["migration"]["device"]
        decide_p, decide_m, step = pl._decide, mg._decide, env.fast_step
        learn_p, learn_m, credit_m = pl._learn, mg._learn, mg._credit
        learns_p, learns_m, reqs = pl.learns, mg.learns, env.requests
        ag_p, ag_m = pl.agent, mg.agent
        n, i = 0, env.step_index
        full, room0 = not pl.evict, pl._room[0]  # see _full
        k_p = k_m = 0  # requests not yet ticked; each agent is ticked at its refresh (until_sync)
        due_p, due_m = ag_p.until_sync(), ag_m.until_sync()
        while True:
            req = reqs[i]
            a_p = decide_p(obs_p, acting, req)
            a_m = decide_m(obs_m, page >= 0, page, dev, i, obs_p, req)
            (obs_p, obs_m, r_p, r_m, latency, evicted, credit, executed, delay_us, done, acting, page,
             dev) = step(a_p, a_m)
            n, i = n + 1, i + 1
            if learns_p:
                learn_p(obs_p, r_p, i, latency, evicted)
                k_p += 1
                if k_p == due_p or done:
                    ag_p.tick(k_p)
                    k_p, due_p = 0, ag_p.until_sync()
            if learns_m:
                last = pl._last
                if last is not None and credit_m is not None:
                    credit_m.placed(last[1], latency, evicted, i)
                    if full and obs_p[room0] == 0.0:
                        credit_m.evicted_at = i
                learn_m(obs_m, r_m, i, latency, executed, delay_us, credit)
                k_m += 1
                if k_m == due_m or done:
                    ag_m.tick(k_m)
                    k_m, due_m = 0, ag_m.until_sync()
            if callback is not None and n % 10_000 == 0:
                callback(n)
            if done:
                return n

    def save(self, path: "str | Path") -> None:
        """Save both agents' training weights and loss curves (call after an episode) to a NumPy
        ``.npz`` file at ``path`` (:func:`hss_gym.agents.c51.save_state`)."""
        if self.placement.agent is None:
            raise RuntimeError("nothing to save: run at least one episode first")
        save_state(path, {"format": "hss-gym-harmonia/1", "placement": self.placement.agent.state_dict(),
                          "migration": self.migration.agent.state_dict()})

    def load(self, path: "str | Path") -> None:
        """Load weights saved by :meth:`save` (checked against the env at the next reset)."""
        state = load_state(path)
        if not isinstance(state, dict) or state.get("format") != "hss-gym-harmonia/1":
            raise ValueError(f"{path}: not a Harmonia weights file")
        self.placement.load_state(state["placement"], f"{path} (placement agent)")
        self.migration.load_state(state["migration"], f"{path} (migration agent)")

    def loss_curves(self) -> dict[str, list[tuple[int, float]]]:
        """Training loss per gradient step of each agent, as (experiences seen, loss)."""
        return {"placement": self.placement.loss_curve, "migration": self.migration.loss_curve}

    def memory_bytes(self) -> int:
        """Bytes of both agents' networks and experience buffers."""
        return sum(p.agent.memory_bytes() for p in (self.placement, self.migration) if p.agent)


#: The reference Harmonia (policy ``harmonia``; ``harmonia_paper`` is the agents as published): the
#: papers' two agents with placements that never evict on the critical path (``evict``), started from
#: the fit_first rule (``prior``, ``margin``, a warm-up costing at most 2% of the latency seen, a device
#: trusted after ``min_tries``), the :class:`Cleaner` (room in idle time, learned victims, readahead),
#: long write streams sent to a home disk as it streams them (``streams``), and a placement network
#: 32 wide trained on minibatches of 64. ``fit_first_ref`` has every part but the networks. Each
#: deviation from the paper and its measured effect: docs/agents.md, docs/learning-diagnostics.md.
REFERENCE = dict(evict=False, clean=0.02, seq_explore=True, first_reads="home", prior="fit", margin=1.0,
                 explore_budget=0.02, min_tries=64, victims="reuse", readahead=READAHEAD_PAGES, streams=True,
                 bypass=True)
REFERENCE_PLACEMENT = {"hidden": (32,), "batch_size": 64}


def harmonia(seed: int = 0, placement: "C51Config | dict[str, Any] | None" = None, **kwargs: Any) -> Harmonia:
    """The reference Harmonia (:data:`REFERENCE`); ``placement`` overrides its hyper-parameters."""
    if not isinstance(placement, C51Config):
        placement = {**REFERENCE_PLACEMENT, **(placement or {})}
    return Harmonia(placement, seed=seed, **{**REFERENCE, **kwargs})


def harmonia_paper(seed: int = 0, **kwargs: Any) -> Harmonia:
    """Harmonia's agents as published: placements evict on the critical path; Table 2's network."""
    h = Harmonia(seed=seed, **kwargs)
    h.name = "harmonia_paper"
    return h
