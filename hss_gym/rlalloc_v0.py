"""RLAlloc: flash-chip allocation for the I/O streams of a multi-streamed SSD (Gymnasium).

Versioned entry point of ``gymnasium.make("hss/RLAlloc-v0")``, PettingZoo style::

    from hss_gym import rlalloc_v0
    env = rlalloc_v0.env(n_streams=8)          # = gymnasium.make("hss/RLAlloc-v0", n_streams=8)

## Description

Li, Wu, Gao, Ji, Li, "RLAlloc: A Deep Reinforcement Learning-Assisted Resource Allocation
Framework for Enhanced Both I/O Throughput and QoS Performance of Multi-Streamed SSDs". Several
I/O streams (by default the eight MSR Cambridge traces of the paper's Table I) share one
multi-streamed SSD (the flash model :mod:`hss_gym.backends.flash`, profile ``rlalloc`` = Table II:
8 channels x 8 chips x 2 dies x 2 planes, 4 KiB pages, read 75 us, program 1100 us, erase 5 ms,
greedy GC). Each stream writes only to the (channel, chip) units allocated to it; the agent moves
chips between streams to raise IOPS and cut tail latency (and with them GC runs and I/O conflicts:
requests of one stream waiting for a chip busy with another's).

One step is one **allocation period** of ``period_us`` simulated microseconds (default 10 ms, about
320 requests of the Table I mix): the action is applied, the requests arriving in the period are
submitted, the SSD model runs to the period's end, and the period's statistics are observed.

## Action Space

``action_mode="flat"`` (default, the paper's DQN output): ``Discrete(1 + N (N - 1))``, 57 for 8
streams. ``0`` is the no-op; ``a >= 1`` is the ordered stream pair ``(dst, donor)`` with
``dst = (a - 1) // (N - 1)`` and ``k = (a - 1) % (N - 1)``, ``donor = k if k < dst else k + 1``.
The chip is chosen by a fixed rule: among the donor's units that ``dst`` does not hold, the one
with the lowest space utilisation (most free space, as the paper wants for GC), ties broken by the
lower active time, then the lower unit id. The chip moves from donor to ``dst`` (a unit also held
by a third stream stays shared with it). The action does nothing (``info["invalid_action"]``) when
the donor has a single chip or no chip ``dst`` lacks.

``action_mode="factored"``: ``MultiDiscrete([N + 1, N + 1, n_units])`` = (destination stream,
source, chip). Destination ``N`` is the no-op; source ``N`` is the free pool (units allocated to no
stream). The named chip moves from the source to the destination; invalid when the chip is not the
source's (or not free), the destination holds it, or the source would be left without chips.

## Observation Space

``Box(0, 1, (1 + N (2 + n_channels) + 7 + n_channels + 2 n_units,), float32)`` = (224,) with Table II
and 8 streams, the paper's input vector (§III-B) in order:

| slice | meaning | scaling |
|---|---|---|
| 1 | number of streams | ``N / 64`` |
| per stream: 2 | I/O intensity: read, write transactions (pages) of the requests that arrived in the last ``demand_periods`` periods (the stream's demand) | x read time (reads) or x program time (writes), / the sum over all streams: the stream's share of the chip time asked for |
| per stream: n_channels | chips allocated to it on each channel | ``/ chips_per_channel`` |
| 7 | device configuration: channels, chips, dies, planes, blocks, pages per block, page size | ``log2(x) / 24`` |
| n_channels | channel bus busy fraction in the period | 0..1 |
| n_units | chip active-time fraction in the period | 0..1 |
| n_units | chip space utilisation (valid pages / physical pages) | 0..1 |

## Rewards

Eq. 1, ``r = W . [IOPS, -tail latency]``, normalised: ``W[0] * completed / offered - W[1] *
log10(1 + tail / lat_ref_us)``, where ``offered`` is the number of requests that arrived in the period
(so 1.0 means keeping up), ``tail`` the worst stream's p99 latency of the period (``tail="p999"``:
p99.9) and ``lat_ref_us`` 10 ms (the paper's Fig. 1 QoS
mark); the logarithm keeps a signal from 1 ms to seconds of tail (0.3 at 10 ms, 1.0 at 100 ms,
2.0 at 1 s). ``reward_weights`` = W, default ``(1.0, 1.0)``.

## Starting State

The SSD is preconditioned (``precondition`` = 0.5 of the logical space valid, fragmented) and the
chips are split equally and isolated (Static, Yang et al. 2014), spread over the channels
(:func:`static_allocation`; with 8 streams each gets one chip on every channel). ``initial="shared"`` starts with every stream on every unit. Requests are
regenerated from the reset seed: same seed, same episode.

## Episode End

Truncated after ``episode_periods`` periods (default 500 = 5 s simulated); never terminated.
``info["metrics"]`` on the last step: IOPS, mean/p99/p99.9 latency, GC runs, I/O conflicts, write
amplification of the whole episode.

## Arguments

``streams`` (Table I names or trace files, default the 8 of Table I), ``n_streams`` (N copies of
``sweep_stream`` = STG_0, the paper's 2-20 stream sensitivity study), ``profile`` ("rlalloc"),
``scale`` (blocks-per-plane shrink, default 1/16; parallelism and timing kept), ``precondition``,
``queue_depth`` (16), ``period_us``, ``episode_periods``, ``action_mode``, ``reward_weights``, ``tail``,
``lat_ref_us``, ``initial``, ``intensity`` (arrival-rate multiplier: the streams' timestamps are
divided by it, request count per period multiplied; 1.0 = Table I's rates), ``demand_periods``
(window of the I/O-intensity entries, default 10 periods = 100 ms: one 10 ms period holds ~34
STG_0 requests, whose count varies by ~25% from period to period), ``render_mode`` ("ansi" or
"rgb_array").

The I/O intensity is the demand (arrived requests), not the transactions completed: under
overload a stream's completions are capped by its chips and hide what it needs; and it is a share
of chip time, not a log count, so that "this stream has fewer chips than its share" is a linear
function of the state (with log counts the DQN did not learn the Demand teacher's choices;
docs/rlalloc.md). ``info`` also gives ``demand_read_tx``/``demand_write_tx`` (the window's transactions
per period).

Baselines that are allocation rules rather than chip moves (Static, Dynamic) drive
:meth:`RLAllocEnv.set_allocation` and step with the no-op.

* ``env(...)``: ``gymnasium.make("hss/RLAlloc-v0", ...)`` (Gymnasium's ``OrderEnforcing`` wrapper;
  :meth:`~hss_gym.envs.rlalloc.env.RLAllocEnv.set_allocation` and the other methods through
  ``env.unwrapped``);
* ``raw_env(...)``: the unwrapped class :class:`~hss_gym.envs.rlalloc.env.RLAllocEnv` (also exported as
  ``RLAllocEnv``);
* the streams, from :mod:`hss_gym.envs.rlalloc.workloads`: ``STREAMS`` (Table I's names, in its
  order), ``TABLE_I`` (their specs) and ``standin(name, ...)`` (a stream's synthetic stand-in trace).

## Version History
* v0 (hss-gym 0.4.0): the environment described here: Table II's SSD on the flash model (profile
  ``rlalloc``), Table I's eight streams, the flat (dst, donor) action with a fixed chip rule and
  the factored one, eq. 1's normalised reward, demand-share I/O intensity over
  ``demand_periods``. ``rlalloc_v0.env()`` returned the bare ``RLAllocEnv`` before it followed
  the PettingZoo convention (``env`` wrapped, ``raw_env`` bare). A change that alters episodes
  becomes ``rlalloc_v1``; this module stays.
"""

from __future__ import annotations

from typing import Any

import gymnasium

import hss_gym  # noqa: F401  (its import registers the ids; a submodule's import runs it first anyway)
from hss_gym.envs.rlalloc.env import RLAllocEnv
from hss_gym.envs.rlalloc.env import RLAllocEnv as raw_env
from hss_gym.envs.rlalloc.workloads import STREAMS, TABLE_I, standin

__all__ = ["env", "raw_env", "RLAllocEnv", "STREAMS", "TABLE_I", "standin"]


def env(**kwargs: Any) -> gymnasium.Env:
    """The registered ``hss/RLAlloc-v0`` environment; keyword arguments as ``RLAllocEnv``."""
    return gymnasium.make("hss/RLAlloc-v0", **kwargs)
