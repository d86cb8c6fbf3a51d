"""L-QoCo: learning cache-overload control (Gymnasium, ``hss/LQoCo-v0``).

Versioned entry point, PettingZoo style::

    from hss_gym import lqoco_v0
    env = lqoco_v0.env(config="oceanstor", workload="S-14")   # = gymnasium.make("hss/LQoCo-v0", ...)

Paper: Ji Zhang et al., "L-QoCo: Learning to Optimize Cache Capacity Overloading in Storage
Systems", DAC 2022.

## Description

A caching tier (DRAM or SSD, capacity C) sits in front of a storage tier (``n`` SSDs or HDDs of an
hss-gym device profile). Writes enter the cache through a token bucket at the admitted bandwidth
I_t that the agent controls; dirty data is destaged to the storage tier at the flush bandwidth O_t,
which varies for real reasons: read misses and bypassed writes take the tier's time first, SSD
garbage collection runs in bursts, an HDD flushes faster the more dirty data its elevator can
sort. The watermark ``W_t = max(0, W_{t-1} + (I_t - O_t)/C)`` (eq. 1) rises when the cache admits
more than the tier absorbs; past the threshold W̄ the cache is overloaded (Definition 1): writes
only enter as blocks are destaged synchronously, so the admitted bandwidth collapses and latency
soars. Too low an I_t leaves writes waiting in the host queue (or, with ``bypass_us``, sends them
to the storage tier). Requests (Table 4 mixes or a real trace) are simulated in aggregated batches
(see :mod:`hss_gym.backends.lqoco.model`); throughput, mean and p99.9 latency, throughput jitter
(eq. 4) and cache-full time are measured from them (:meth:`LQoCoEnv.metrics`).

## Action Space

``Discrete(5)``: SlowDecrease, FastDecrease, Keep, SlowIncrease, FastIncrease, i.e.
``I_{t+1} = (1 + a) I_t`` with ``a`` in ``magnitudes`` (default -1%, -3%, 0, +1%, +3%). I_t is kept
within ``rate_bounds`` x the tier's nominal flush bandwidth. Controllers that set the rate directly
(CoTo's eq. 9-10, fine tuning, "no control") call :meth:`LQoCoEnv.step_rate` (MB/s; ``inf`` = no
limit) instead of ``step``.

## Observation Space

``observation="discrete"`` (default): ``Discrete(36)``, index ``(Ŵ*3 + P̂)*3 + B̂`` of the paper's
discretised state: Ŵ in {ExtremelyLow, Low, Mid, High} (cut at ``w_bins``), P̂ in {Low, Mid, High}
for ``P_t = (I_t - O_t)/O_t`` (Mid within ±``p_tol``), B̂ in {Overuse, Fulluse, Underuse} for
``I_t / BtlBw`` against ``b_band``, BtlBw being the BBR bottleneck estimate (max of O_t over
``bdp_window`` periods). ``observation="raw"``: ``Box((0, -1, 0), (1, 10, 10), (3,), float32)``
= ``(W_t, P_t, I_t/BtlBw)`` (P and the ratio clipped to [-1, 10] and [0, 10]).

## Rewards

Eq. 8 over Table 2's values v (Ŵ: 0, 0, 1, -1; P̂: -1, 0, -1; B̂: -1, 1, 0 for Overuse, Fulluse,
Underuse) with weights ``weights = (f_W, f_P, f_B)`` summing to 1. ``reward="signed"`` (default):
``R = f_W v_W + f_P v_P + f_B v_B`` (Better states earn the most, Worse states -1). ``reward="eq8"``:
the printed formula ``Σ f (v²/(n-1)² - 1)``, which squares away the sign, so High scores like Mid
and Mid like nothing: kept for reference, see docs/lqoco.md.

## Starting State

Empty cache (W = 0), I_0 = ``init_rate`` x the nominal flush bandwidth of the first workload
phase, idle tier, seeded arrival process.

## Episode End

Never terminates; truncated after ``periods`` control periods (default 1500, the paper's window).

## Arguments

``gymnasium.make("hss/LQoCo-v0", config="oceanstor", workload="S-13", periods=1500, ...)``:
``config`` ("oceanstor": DRAM cache + 8 TLC SSDs with GC; "linux": Optane-class SSD cache + 8
HDDs), ``workload`` (a Table-4 name S-1..S-19 / R-A..R-E, ``"adapt"`` = the §4.3 sequence, a list
of names or (name, periods) pairs, a trace file path or ``Trace``), ``period_s`` (1.0),
``substeps`` (4 batches per period), ``observation`` ("discrete"), ``reward`` ("signed"),
``weights`` ((0.5, 0.25, 0.25)), ``magnitudes``, ``bypass_us`` (None = host queue; a number =
bypass writes whose wait would exceed it), ``bucket_s`` (0.1), ``init_rate`` (1.0),
``rate_bounds`` ((0.05, 20)), ``load`` (1.0; scales the offered load), ``burst``
(dict of :class:`~hss_gym.envs.lqoco.workloads.Burst` fields), ``cache``/``tier`` (dicts of
:class:`~hss_gym.backends.lqoco.model.CacheSpec` / ``TierSpec`` fields overriding the config),
``w_bins`` ((0.05, 0.3, 0.7)), ``p_tol`` (0.05), ``b_band`` ((0.9, 1.05)), ``bdp_window`` (10),
``trace_speedup`` ("auto" or a factor),
``render_mode`` ("ansi" or "rgb_array").

* ``env(**kwargs)``: ``gymnasium.make("hss/LQoCo-v0", **kwargs)`` (order enforcing; the passive
  env checker is off, as for every hss-gym id); :meth:`~hss_gym.envs.lqoco.env.LQoCoEnv.step_rate`
  and the other methods through ``env.unwrapped``;
* ``raw_env``: the unwrapped class :class:`hss_gym.envs.lqoco.env.LQoCoEnv`;
* ``gymnasium.make_vec("hss/LQoCo-v0", num_envs=N, **kwargs)``: N envs stepped in one C call, a
  native ``gymnasium.vector.VectorEnv``
  (:class:`hss_gym.envs.lqoco.vector.LQoCoVectorEnv`; ``vectorization_mode="sync"`` gives
  Gymnasium's SyncVectorEnv): the same observations, rewards, episode ends and numeric infos as
  SyncVectorEnv over the same seeds and actions, next-step autoreset;
* the workloads, from :mod:`hss_gym.envs.lqoco.workloads`: ``MIXES`` (Table 4's request mixes by
  name), ``ADAPT_SEQUENCE`` (the ``"adapt"`` workload's names) and ``Burst`` (the ``burst`` fields).

## Version History
* v0 (hss-gym 0.4.0): the environment described here: the batched cache/storage-tier simulator
  on the device profiles ("oceanstor", "linux"), Table 4's workloads, the discretised state of
  Table 1-2 and the signed eq. 8 reward by default. A change that alters episodes becomes
  ``lqoco_v1``; this module stays. After hss-gym 0.12.0 the per-period logic runs in C, with the
  same episodes (bit for bit), and ``gymnasium.make_vec`` gives the native vector env.
"""

from __future__ import annotations

from typing import Any

import gymnasium

import hss_gym  # noqa: F401  (its import registers the ids; a submodule's import runs it first anyway)
from hss_gym.envs.lqoco.env import LQoCoEnv as raw_env
from hss_gym.envs.lqoco.workloads import ADAPT_SEQUENCE, MIXES, Burst

__all__ = ["env", "raw_env", "ADAPT_SEQUENCE", "MIXES", "Burst"]


def env(**kwargs: Any) -> gymnasium.Env:
    """The registered ``hss/LQoCo-v0`` environment; keyword arguments as ``LQoCoEnv``."""
    return gymnasium.make("hss/LQoCo-v0", **kwargs)
