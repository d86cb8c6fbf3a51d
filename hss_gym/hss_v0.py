"""HSS: data placement and migration in a hybrid storage system, two agents (PettingZoo).

The package's main problem (Harmonia, 2025; Sibyl, ISCA'22), PettingZoo style, as
``pettingzoo.butterfly.pistonball_v6``::

    from hss_gym import hss_v0
    env = hss_v0.parallel_env(config="perf_opt", workload="ycsb-b")   # ParallelEnv
    env = hss_v0.env(config="perf_opt", workload="ycsb-b")            # AEC env (wrapped)

## Description
A hybrid storage system (fast and slow block devices behind one address space) replays a block
I/O trace. **One step = one host request**, in arrival order. Two agents act on it:

* ``placement`` decides which device receives a write, or a page touched for the first time;
* ``migration`` judges one *candidate page* per step, chosen by the environment's scanner among
  previously placed pages (Harmonia section 4.3: long access/migration intervals first, recently
  moved pages skipped). Its action is the page's target device; its current device means "stay".
  Moves go to a migration queue (``queue_size``, default 10) that runs in device idle time; when
  the queue is full the oldest move runs at once, competing with host I/O.

``possible_agents == agents == ["placement", "migration"]`` for the whole episode. An agent with
no decision this step has ``infos[agent]["acting"] == False``; its action is still checked against
the action space (an int or NumPy integer in range; ``"0"``, ``1.5`` or ``True`` raise), then
ignored. ``step`` before ``reset`` or after truncation raises; see :mod:`hss_gym.envs._contract`
for the contract shared by every env, and for ``copy.deepcopy``/``pickle`` (by replay).

Single-agent views of the same env, with the other agent following a fixed policy, are registered
with Gymnasium: ``gymnasium.make("hss/Placement-v0")`` (Sibyl's problem: Sibyl's six features, no
migration) and ``"hss/Migration-v0"`` (see :mod:`hss_gym.envs.hss.single`).

## Action Space
``Discrete(N)`` for both agents, N = number of devices, device 0 the fastest.

## Observation Space
``Box(0, 1, (7 + max(0, N - 2),), float32)`` per agent: the Table-1 features of
:mod:`hss_gym.envs.hss.features` (``raw_bins=True``: ``MultiDiscrete`` bin indices;
``features="sibyl"``: Sibyl's six features).

Infos, every step, per agent: ``acting`` (bool), ``action_mask`` (int8, one entry per device; a
fresh array every call), ``step``. Placement: ``latency_us`` of the request just served and
``evicted`` (pages its placement evicted on the critical path; Sibyl's reward penalises them).
Migration: ``credit`` (list, possibly empty), ``executed`` (the decision steps of the moves
executed, or dropped as stale, during this step, in FIFO order; a fresh list) and
``move_delay_us`` (what those moves delayed host I/O, summed, in µs: how long past the next host
request's arrival they kept their source or target device busy; a queued move starts in idle time
but is not pre-empted, and one run at once because the queue was full is charged from that
arrival; measured only, it changes no timing; 0.0 when none ran), ``page`` (the candidate now
observed, or -1) and ``device`` (its current device, or -1).

## Rewards
* placement (immediate, Harmonia eq. 2): ``L_ref / L_t`` for the request it placed, where
  ``L_t`` is that request's latency and ``L_ref`` the fast device's 4 KiB read service time
  (``reward_ref_us``; 10.9 µs on perf_opt), so a request served at fast-device speed earns ~1;
  0 on steps where it did not act. ``reward="latency"``: ``-L_t / L_ref`` on *every* step
  (also those where it did not act), so an episode's return is minus its summed latency over
  ``L_ref``, the leaderboard's mean latency up to a constant (Harmonia's ratio behaves like a
  harmonic mean instead; docs/hss.md compares the two).
* migration (delayed, Harmonia eq. 3): once ``x`` (=10) of its moves have been executed, the next
  ``n`` (=50) host requests' latencies give ``L_ref * n / sum(L_i) - P``, with
  ``P = penalty * mean(1 / acc_intr + 1 / migr_intr)`` over the moves it pays for (intervals in
  requests at decision time; discourages ping-pong). Returned on the step it becomes known, with
  ``infos["migration"]["credit"]`` = the step indices of the actions it pays for; 0 otherwise.
  A window pays for every move executed since the previous window began (at least ``x``): when
  moves execute faster than windows close, none is left unmeasured and none is paid late.

## Starting State
Every device empty and idle: a page's data lives on the home device (the last, slowest one) until
its first access (``preloaded=True``: already wherever it is placed). The trace is generated or
read from ``workload`` with the episode's seed, which also seeds the device model: same seed, same
episode. ``reset(seed=s)`` plays the episode of seed ``s``; an unseeded ``reset()`` draws the next
episode's seed from the env's generator (Gymnasium's convention: ``reset(seed=s)`` reseeds it,
and before any seed it comes from entropy), so successive unseeded resets give new episodes, the
same ones after the same ``reset(seed=s)``. A trace file is read once and replayed as is, unless
``trace_window`` draws a window of it per episode.

## Episode End
Truncation after the last request of the trace (or ``max_steps``); no termination. On the final
step both agents' infos carry ``metrics`` (the run's :class:`hss_gym.metrics.RunMetrics` as a
dict); :meth:`~hss_gym.envs.hss.env.HSSParallelEnv.metrics` gives them at any time.

## Arguments
Constructor keywords; ``reset(options=...)`` may change ``workload``/``window``; other reset
options are ignored with a ``UserWarning`` naming them (PettingZoo's ``parallel_api_test`` passes
``options={"options": 1}``).

``config`` (name, device list or HSSConfig), ``workload`` (a name, ``catalogue:NAME``, a trace
path, a path with reader options ``{"path": ..., "format": ..., ...}`` or a Trace), ``n_requests``,
``window`` ((start, stop) slice of the trace), ``backend`` ("sim", or "uring" with ``paths=[fast,
..., home]`` files/block devices and ``backend_options`` of :mod:`hss_gym.backends.real`: measured
latencies), ``max_steps``, ``raw_bins``, ``features`` ("harmonia" or "sibyl"), ``reward_n`` (50),
``reward_x`` (10), ``penalty`` (0.01), ``reward_ref_us``, ``migration`` (False disables the
migration agent's decisions), ``room_feature`` ("fraction": the free-space features
``fast_cap``/``free_d`` are ``floor(8 x free fraction)`` as published; "fits": bin 0 when the
request does not fit in the device's free space, i.e. placing it there evicts on the critical
path, else 1 + the free fraction in sevenths; "binary": 0 when it does not fit, 7 when it fits),
``trace_window`` (None; ``N`` or ``(low, high)``: each episode is a window of ``N`` requests, or
of a length drawn in [low, high], at a start drawn from the episode's seed, of a trace file, a
``catalogue:NAME`` or a ``Trace``; not with ``window``, nor a generated workload, whose episodes
are new anyway; ``n_requests`` still bounds what is read of the file: ``n_requests=None`` reads it
all; ``env.episode_window`` is the episode's ``(start, stop)``), ``reward`` ("ratio": Harmonia's
``L_ref / L_t``, or "latency"), ``render_mode`` ("ansi" or "rgb_array"), plus any
:class:`hss_gym.config.HSSConfig` field (``queue_size``, ``fast_fraction``, ``queue_depth``, ...).

>>> from hss_gym import hss_v0
>>> env = hss_v0.parallel_env(config="perf_opt", workload="ycsb-b", n_requests=10_000)
>>> obs, infos = env.reset(seed=0)
>>> while env.agents:
...     actions = {a: env.action_space(a).sample() for a in env.agents}
...     obs, rewards, terms, truncs, infos = env.step(actions)
>>> infos["placement"]["metrics"]["mean_latency_us"]

* ``parallel_env(...)``: the :class:`~hss_gym.envs.hss.env.HSSParallelEnv` (``hss_gym.parallel_env``
  is the same factory);
* ``env(...)``: its AEC form (PettingZoo's ``parallel_to_aec``), wrapped in ``OrderEnforcingWrapper``;
* ``raw_env(...)``: the AEC form unwrapped.

## Version History
* v0 (hss-gym 0.4.0): the environment described here: Harmonia's features and rewards (eq. 2-3),
  Sibyl's features as an option, the migration queue run in idle time. Also named ``hss/Harmonia-v0``
  (in error messages and documents), never a Gymnasium id (PettingZoo envs are not in
  Gymnasium's registry).
  hss-gym 0.5.0 added to the HSS (``env.hss``) a background cleaning a policy may ask for
  (``HSS.clean``: a faster device's coldest pages moved down as one batch in idle time) and its
  counters (``cleaned_pages``, ``clean_misses``); episodes of policies that do not use it are
  unchanged, bit for bit. hss-gym 0.5.1 moved the native core to ``hss_gym.backends._core`` and
  changed the reference Harmonia agent, not this environment. hss-gym 0.5.2 added the option
  ``room_feature="binary"`` (the reference agents' observation); the other values are unchanged.
  hss-gym 0.7.0: an unseeded ``reset()`` draws a new episode from the env's generator (before,
  it replayed the last seeded one); the options ``trace_window`` and ``reward="latency"``;
  ``HSS.clean`` may be asked to run in chunks that yield to host I/O (``chunk``). Every seeded
  episode of a policy is unchanged, bit for bit, for the same calls.
  A change that alters episodes becomes ``hss_v1``; this module stays.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from hss_gym.envs.hss.env import HSSParallelEnv

__all__ = ["env", "raw_env", "parallel_env"]


def parallel_env(config: Any = "perf_opt", workload: Any = "ycsb-b", backend: str = "sim",
                 **options: Any) -> HSSParallelEnv:
    """The two-agent (placement + migration) ``ParallelEnv``; arguments in the module docstring."""
    return HSSParallelEnv(config, workload, backend=backend, **options)


def raw_env(*args: Any, **kwargs: Any) -> AECEnv:
    """``parallel_env(...)`` as an AEC env, without wrappers."""
    return parallel_to_aec_wrapper(parallel_env(*args, **kwargs))


def env(*args: Any, **kwargs: Any) -> AECEnv:
    """``raw_env(...)`` in PettingZoo's ``OrderEnforcingWrapper`` (the way to get the AEC env)."""
    return OrderEnforcingWrapper(raw_env(*args, **kwargs))
