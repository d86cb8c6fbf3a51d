"""FleetIO: multi-tenant vSSD bandwidth harvesting, one agent per vSSD (PettingZoo).

PettingZoo style, as ``pettingzoo.butterfly.pistonball_v6``::

    from hss_gym import fleetio_v1
    env = fleetio_v1.parallel_env(mix="mix4")     # ParallelEnv
    env = fleetio_v1.env(mix="mix4")              # AEC env (wrapped)

From Sun et al., "FleetIO: Managing Multi-Tenant Cloud Storage with Multi-Agent Reinforcement
Learning", ASPLOS'25 (SPEC §11).

## Description
N virtual SSDs (vSSDs) share one 16-channel flash SSD; each starts hardware-isolated on 16/N
channels. Every decision window (2 s of simulated time) each vSSD's agent may make some of its
bandwidth harvestable (ghost superblocks, gSBs, over its home channels), harvest gSBs offered by
other vSSDs (its I/O then also uses those channels, shared with their home vSSD) and set the
scheduling priority of its I/O. Actions go through admission control (50 ms batches,
Make_Harvestable first, harvests first-come-first-served with less-harvested vSSDs first under
contention; ``admission_policy`` filters them); in-use gSBs being reclaimed are released lazily
when GC next runs on their channels. The SSD is the transaction-level flash SSD model of
:mod:`hss_gym.backends.flash` (profile ``fleetio``: Table 3's SSD, whose chips suspend programs and
erases for reads; validated against MQSim), one stream per vSSD,
driven by :mod:`hss_gym.envs.fleetio.flash` (the tenants' requests are generated per ``tick_ms``
tick of the window).

``possible_agents == agents == ["vssd_0", ..., "vssd_{N-1}"]`` for the whole episode (N = the
mix's tenants: 2, 4 or 8 for Table 5).

## Action Space
``MultiDiscrete([C + 1, C + 1, 3])`` per agent, C = 16 channels:
``[harvest, make_harvestable, priority]``. ``harvest = k > 0`` asks for one gSB of k channels
(Harvest(gsb_bw) with gsb_bw = k x 64 MB/s; best fit), 0 harvests nothing.
``make_harvestable = k`` reclaims this vSSD's gSBs wider than k channels and, if k > 0, offers a
new gSB of up to k of its home channels (only channels with >= 25% free blocks; none: refused);
so 0 reclaims every gSB it offers. ``priority`` 0/1/2 = low/medium/high. With
``isolation != "fleetio"`` (the baselines' sharing schemes) actions are ignored.

## Observation Space
``Box(0, 1, (33,), float32)``: Table 1's features of the last 3 windows (oldest first), 11 per
window: Avg_BW / device BW, Avg_IOPS / 1e5, Avg_Lat / 10 ms, SLO_Vio (fraction), QDelay / 10 ms,
RW_Ratio (read fraction of bytes), Avail_Capacity (free fraction of its home channels), In_GC,
Cur_Priority / 2, and the two shared states: sum of the other vSSDs' Avg_IOPS / 1e5 and mean of
their SLO_Vio. Values are clipped to [0, 1].

Infos, per agent, every step: ``bandwidth_MBps``, ``p99_us``, ``slo_vio``, ``harvested_channels``,
``offered_channels``, ``priority``, ``alpha``, ``category``, ``workload``; ``admission``
(counts of the step's admission results). :meth:`FleetIOEnv.episode_metrics` gives the episode's
storage utilisation, LS P99, BW-intensive bandwidth and SLO violations.

## Rewards
Eq. 1-2: ``R_single = (1 - a) BW / BW_guar - a SLO_vio / SLO_guar`` with BW_guar = the bandwidth
of the vSSD's allocated (home) channels, SLO_vio the fraction of its window's requests above its
SLO (its P99 under hardware isolation, profiled at construction), SLO_guar = 0.01; ``a`` per
workload class (nearest k-means centroid of §3.4's features: LC-1 0.025, LC-2 0.005, TO 0; a
workload far from every centroid gets the unified 0.01). ``R_i = b R_single_i + (1 - b)
mean_{j != i} R_single_j`` with b = ``beta`` (0.6).

## Starting State
Every vSSD on its home channels, no gSBs, medium priority; the SSD empty (``precondition=None``)
or with a fraction of its logical space valid; tenants' phases and the device's seed drawn from
``seed``. ``warmup`` (3) windows run before the first observation.

## Episode End
Truncation after ``windows`` decision windows (60 = 2 simulated minutes); no termination.

## Arguments
``mix`` (``"mix1"``..``"mix5"`` of Table 5, ``"train2a"``/``"train2b"``/``"train4"``/``"train8"``,
or a list of workload names / tenant objects, e.g. from
:func:`trace_tenants`), ``windows`` (60), ``window_s`` (2.0),
``beta`` (0.6), ``alpha`` (None = per class; a float or a list per vSSD), ``slo_guar`` (0.01),
``slo_us`` (list per vSSD; None = profiled), ``isolation`` ("fleetio" | "hardware" | "software" |
"adaptive" | "static"), ``channels`` (channel counts per vSSD for the home partition / "static"),
``token_rate`` (software isolation's token-bucket rate, x the guaranteed bandwidth, 1.5),
``batch_ms`` (50), ``inference_ms`` (1.1: agent i's action reaches admission control at
i x 1.1 ms), ``admission_policy`` (callable(kind, vssd, n_chls) -> bool), ``scale`` (1/16:
capacity multiplier = blocks per plane of the flash model; smaller = GC and free-space effects
within fewer windows and less memory (the mapping tables), a coarser capacity; it does not change
the cost of a window, which grows with the offered load in page transactions, the number of
vSSDs and ``window_s``), ``warmup`` (3), ``tick_ms`` (100: the granularity of the tenants' offered
load; requests are Poisson within a tick), ``precondition`` (fraction of the logical space valid
at start; None = empty), ``profile`` (the flash SSD: ``"fleetio"``, or a profile of 16 channels:
a built-in name, a JSON / ssdconfig.xml path or a ``FlashProfile``), ``render_mode`` ("ansi" or
"rgb_array").

* ``parallel_env(mix, ...)``: the :class:`~hss_gym.envs.fleetio.env.FleetIOEnv` (``FleetIOEnv`` is
  exported here too);
* ``env(...)``: its AEC form (PettingZoo's ``parallel_to_aec``), wrapped in ``OrderEnforcingWrapper``;
* ``raw_env(...)``: the AEC form unwrapped;
* the tenants, from :mod:`hss_gym.envs.fleetio.workloads`: ``MIXES`` (Table 5's mixes),
  ``workload_names()``, ``get_workload(name, **overrides)`` (a workload, ``.instance()`` a tenant)
  and ``trace_tenants(path, ...)`` (one tenant per volume of a real trace).

## Version History
* v1 (hss-gym 0.5.2): the SSD (profile ``fleetio``) suspends programs and erases for
  reads (MQSim's PROGRAM_ERASE semantics and timings: an enterprise TLC open-channel SSD's NAND
  does); everything else as v0. The latency-sensitive vSSDs' P99 falls where reads waited behind
  programs on their chips (docs/fleetio.md: fleetio-v1 suite version 3). ``profile=`` chooses
  another device. Named ``hss/FleetIO-v1`` in error messages and documents (not a Gymnasium id).
* v0 (hss-gym 0.4.0): Table 5's mixes, the gSB pool and admission control, rewards eq. 1-2 with
  the §3.4 classes, on the transaction-level flash model without suspension; still available as
  :mod:`hss_gym.fleetio_v0` (profile ``fleetio-v0``), episode for episode.
  A change that alters episodes becomes ``fleetio_v2``; this module stays.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from hss_gym.envs.fleetio.env import FleetIOEnv, parallel_env
from hss_gym.envs.fleetio.workloads import MIXES, get_workload, trace_tenants, workload_names

__all__ = ["env", "raw_env", "parallel_env", "FleetIOEnv", "MIXES", "get_workload", "trace_tenants", "workload_names"]


def raw_env(*args: Any, **kwargs: Any) -> AECEnv:
    """``parallel_env(...)`` as an AEC env, without wrappers."""
    return parallel_to_aec_wrapper(parallel_env(*args, **kwargs))


def env(*args: Any, **kwargs: Any) -> AECEnv:
    """``raw_env(...)`` in PettingZoo's ``OrderEnforcingWrapper`` (the way to get the AEC env)."""
    return OrderEnforcingWrapper(raw_env(*args, **kwargs))
