"""The RLAlloc environment (Gymnasium, ``hss/RLAlloc-v0``) of :mod:`hss_gym.rlalloc_v0`.

Documented there (Description, Action Space, Observation Space, Rewards, Starting State, Episode
End, Arguments, Version History); get it with ``rlalloc_v0.env(...)`` or
``gymnasium.make("hss/RLAlloc-v0", ...)``.
"""

from __future__ import annotations

import math
import os
from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from hss_gym import render
from hss_gym.render import RENDER_MODES, check_render_mode
from hss_gym.envs._contract import (ReplayCopy, check_discrete_action, check_int, check_multidiscrete_action,
                                    check_real, check_reals, env_closed, episode_over, not_reset)
from hss_gym.envs.rlalloc.workloads import STREAMS, stream_trace
from hss_gym.workloads.trace import WRITE
from hss_gym.backends import flash

SWEEP_STREAM = "STG_0"
MAX_STREAMS_SCALE = 64.0
TAILS = ("p99", "p999")
ACTION_MODES = ("flat", "factored")
INITIAL = ("static", "shared")


def _flash():
    """The flash SSD model (imported lazily: ``import hss_gym`` stays light)."""
    return flash


def static_allocation(n_streams: int, n_channels: int, chips_per_channel: int) -> list[np.ndarray]:
    """Equal isolated split spread over the channels: units are taken in chip-major order (chip 0
    of every channel, then chip 1, ...) and each goes to the stream with the fewest units, ties to
    the one with the fewest units on that channel, then the lowest id."""
    n_units = n_channels * chips_per_channel
    if not 1 <= n_streams <= n_units:
        raise ValueError(f"n_streams={n_streams}: need 1..{n_units} streams for {n_units} chips")
    count = np.zeros(n_streams, dtype=np.int64)
    per_ch = np.zeros((n_streams, n_channels), dtype=np.int64)
    out: list[list[int]] = [[] for _ in range(n_streams)]
    for c in range(chips_per_channel):
        for ch in range(n_channels):
            s = int(np.lexsort((np.arange(n_streams), per_ch[:, ch], count))[0])
            out[s].append(ch * chips_per_channel + c)
            count[s] += 1
            per_ch[s, ch] += 1
    return [np.array(sorted(u), dtype=np.int32) for u in out]


def decode_flat(action: int, n_streams: int) -> tuple[int, int] | None:
    """``(dst, donor)`` of flat action ``action``; ``None`` for the no-op 0."""
    if action == 0:
        return None
    dst, k = divmod(action - 1, n_streams - 1)
    return dst, (k if k < dst else k + 1)


def encode_flat(dst: int, donor: int, n_streams: int) -> int:
    """The flat action moving a chip from ``donor`` to ``dst`` (inverse of :func:`decode_flat`)."""
    if dst == donor:
        raise ValueError(f"dst and donor must differ, both are {dst}")
    return 1 + dst * (n_streams - 1) + (donor if donor < dst else donor - 1)


class RLAllocEnv(ReplayCopy, gym.Env):
    """``rlalloc_v0.raw_env``; see :mod:`hss_gym.rlalloc_v0`. ``copy.deepcopy`` and ``pickle`` work by replay
    (:class:`hss_gym.envs._contract.ReplayCopy`)."""

    _replay_pre = ("_np_random", "_np_random_seed")
    _replay_extra = ("spec",)

    # render_fps: playback rate of a recorded episode (one frame per allocation period)
    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 10}

    def __init__(self, streams: Sequence[str] | None = None, n_streams: int | None = None,
                 sweep_stream: str = SWEEP_STREAM, profile: Any = "rlalloc", scale: float = 1 / 16,
                 precondition: float | None = 0.5, queue_depth: int = 16, period_us: float = 10_000.0,
                 episode_periods: int = 500, action_mode: str = "flat",
                 reward_weights: Sequence[float] = (1.0, 1.0), tail: str = "p99",
                 lat_ref_us: float = 10_000.0, initial: str = "static", intensity: float = 1.0,
                 demand_periods: int = 10, render_mode: str | None = None) -> None:
        if streams is not None and n_streams is not None:
            raise ValueError("give streams (a list) or n_streams (copies of sweep_stream), not both")
        if streams is None:
            if n_streams is not None:
                n_streams = check_int("n_streams", n_streams, 2)
            streams = list(STREAMS) if n_streams is None else [sweep_stream] * n_streams
        self.streams = [str(s) for s in streams]
        self.n_streams = len(self.streams)
        for name in self.streams:
            if name.strip().upper().replace("-", "_") not in STREAMS and not os.path.isfile(name):
                raise ValueError(f"streams: {name!r} is neither a Table I name ({', '.join(STREAMS)}) "
                                 f"nor an existing trace file")
        if self.n_streams < 2:
            raise ValueError(f"streams: RLAlloc needs at least 2 streams, got {self.n_streams}")
        for name, val, ok in (("action_mode", action_mode, ACTION_MODES), ("tail", tail, TAILS),
                              ("initial", initial, INITIAL)):
            if val not in ok:
                raise ValueError(f"{name}={val!r}; valid: {', '.join(ok)}")
        for name, val in (("period_us", period_us), ("lat_ref_us", lat_ref_us), ("intensity", intensity)):
            check_real(name, val, 0.0, low_open=True)
        scale = check_real("scale", scale, 0.0, 1.0, low_open=True)
        for name, val in (("episode_periods", episode_periods), ("queue_depth", queue_depth),
                          ("demand_periods", demand_periods)):
            check_int(name, val, 1)
        if precondition is not None:
            precondition = check_real("precondition", precondition, 0.0, 1.0, high_open=True)
        reward_weights = check_reals("reward_weights (IOPS, tail latency)", reward_weights, 2)
        check_render_mode(render_mode)
        flash = _flash()
        if isinstance(profile, flash.FlashProfile):
            self.profile = profile.scaled(scale) if scale != 1 else profile
        else:
            self.profile = flash.load_profile(profile, scale=scale)
        p = self.profile
        self.n_channels, self.chips_per_channel, self.n_units = p.n_channels, p.chips_per_channel, p.n_units
        if self.n_streams > self.n_units:
            raise ValueError(f"streams: {self.n_streams} streams but only {self.n_units} chips")
        self.precondition, self.queue_depth = precondition, int(queue_depth)
        self.period_us, self.episode_periods = float(period_us), int(episode_periods)
        self.action_mode, self.tail, self.initial = action_mode, tail, initial
        self.reward_weights = (float(reward_weights[0]), float(reward_weights[1]))
        self.lat_ref_us = float(lat_ref_us)
        self.intensity = float(intensity)
        self.demand_periods = int(demand_periods)
        self.render_mode = render_mode
        n, nch = self.n_streams, self.n_channels
        self.obs_size = 1 + n * (2 + nch) + 7 + nch + 2 * self.n_units
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.obs_size,), np.float32)
        self.action_space = (gym.spaces.Discrete(1 + n * (n - 1)) if action_mode == "flat"
                             else gym.spaces.MultiDiscrete([n + 1, n + 1, self.n_units]))
        # constant parts of the state
        self._config = np.array([math.log2(v) / 24.0 for v in (
            p.n_channels, p.n_units, p.dies_per_chip, p.planes_per_die, p.blocks_per_plane,
            p.pages_per_block, p.page_size)], dtype=np.float32).clip(0, 1)
        self._ssd = None
        self._closed = False  # close() has run, and no reset() since
        self._alloc: list[np.ndarray] = []
        self._region = p.logical_bytes // n // 4096 * 4096

    # ----------------------------------------------------------------- allocation
    def allocation(self) -> list[np.ndarray]:
        """The units allocated to each stream (copies)."""
        return [a.copy() for a in self._alloc]

    def set_allocation(self, allocation: Sequence[Sequence[int]]) -> None:
        """Allocate units to every stream at once (allocation-rule baselines); units may be shared."""
        if self._ssd is None:
            raise env_closed("hss/RLAlloc-v0") if self._closed else not_reset("hss/RLAlloc-v0")
        new = self._checked_allocation(allocation)
        self._replay_log("set_allocation", [u.tolist() for u in new])
        self._assign(new)

    def _assign(self, new: list[np.ndarray]) -> None:
        for s, u in enumerate(new):
            if not np.array_equal(u, self._alloc[s]):
                self._set_units(s, u)

    def _checked_allocation(self, allocation: Sequence[Sequence[int]]) -> list[np.ndarray]:
        if len(allocation) != self.n_streams:
            raise ValueError(f"allocation: {len(allocation)} entries for {self.n_streams} streams")
        new = []
        for s, units in enumerate(allocation):
            u = np.unique(np.asarray(units, dtype=np.int32))
            if len(u) == 0 or u[0] < 0 or u[-1] >= self.n_units:
                raise ValueError(f"allocation[{s}]: need >= 1 unit id in 0..{self.n_units - 1}, "
                                 f"got {list(units)}")
            new.append(u)
        return new

    def unit_busy(self) -> np.ndarray:
        """Each unit's active-time fraction in the last period (a copy)."""
        return self._unit_busy.copy()

    def _set_units(self, stream: int, units: np.ndarray) -> None:
        self._alloc[stream] = units
        self._ssd.set_units(stream, units.tolist())

    def _pick_chip(self, dst: int, donor: int) -> int | None:
        cand = np.setdiff1d(self._alloc[donor], self._alloc[dst])
        if len(cand) == 0 or len(self._alloc[donor]) < 2:
            return None
        key = np.lexsort((cand, self._unit_busy[cand], self._unit_valid[cand]))
        return int(cand[key[0]])

    def _move(self, dst: int, src: int | None, chip: int) -> None:
        if src is not None:
            self._set_units(src, self._alloc[src][self._alloc[src] != chip])
        self._set_units(dst, np.union1d(self._alloc[dst], [chip]).astype(np.int32))

    def _apply(self, action: Any) -> bool:
        """Apply ``action``; False when it was invalid (then nothing changes)."""
        n = self.n_streams
        if self.action_mode == "flat":
            pair = decode_flat(int(action), n)
            if pair is None:
                return True
            chip = self._pick_chip(*pair)
            if chip is None:
                return False
            self._move(pair[0], pair[1], chip)
            return True
        dst, src, chip = (int(x) for x in np.asarray(action).reshape(-1))
        if dst == n:
            return True
        if dst == src or chip in self._alloc[dst]:
            return False
        if src == n:
            if any(chip in a for a in self._alloc):
                return False
            self._move(dst, None, chip)
            return True
        if chip not in self._alloc[src] or len(self._alloc[src]) < 2:
            return False
        self._move(dst, src, chip)
        return True

    # ----------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._closed = False
        if options:
            raise ValueError(f"options: RLAlloc-v0 takes no reset options, got {sorted(options)}")
        self._replay_reset(seed=seed, options=options)
        super().reset(seed=seed)
        ep_seed = int(self.np_random.integers(0, 2**31 - 1))
        if self._ssd is not None:
            self._ssd.close()
        flash = _flash()
        self._ssd = flash.FlashSSD(self.profile, n_streams=self.n_streams, queue_depth=self.queue_depth,
                                   seed=ep_seed, precondition=self.precondition)
        horizon = self.period_us * self.episode_periods * self.intensity
        parts = [stream_trace(name, horizon, ep_seed + 7919 * i, (i * self._region, self._region), i)
                 for i, name in enumerate(self.streams)]
        t = np.concatenate([p.time_us for p in parts]) / self.intensity
        order = np.argsort(t, kind="stable")
        self._t = t[order]
        self._stream = np.concatenate([p.stream for p in parts]).astype(np.int32)[order]
        self._offset = np.concatenate([p.offset for p in parts])[order]
        self._size = np.concatenate([p.size for p in parts])[order]
        self._write = (np.concatenate([p.op for p in parts]) == WRITE)[order]
        ps = self.profile.page_size
        self._pages = ((self._offset + self._size - 1) // ps - self._offset // ps + 1).astype(np.float64)
        self._bounds = np.searchsorted(self._t, self.period_us * np.arange(1, self.episode_periods + 1))
        self._provenance = [p.source for p in parts]
        self._alloc = [np.arange(self.n_units, dtype=np.int32) for _ in range(self.n_streams)]
        if self.initial == "static":
            self._assign(self._checked_allocation(static_allocation(self.n_streams, self.n_channels,
                                                                     self.chips_per_channel)))
        self._period, self._next_req = 0, 0
        self._demand_hist = np.zeros((self.demand_periods, 2, self.n_streams))
        self._unit_busy = np.zeros(self.n_units)
        self._unit_valid = np.zeros(self.n_units)
        stats = self._ssd.run_until(0.0)
        self._unit_valid = np.asarray(stats.unit_valid_frac, dtype=np.float64)
        self._last = stats
        obs = self._observe(stats, np.zeros(self.n_streams), np.zeros(self.n_streams))
        return obs, {"period": 0, "episode_seed": ep_seed}

    def step(self, action: Any):
        if self._ssd is None:
            raise env_closed("hss/RLAlloc-v0") if self._closed else not_reset("hss/RLAlloc-v0")
        if self._period >= self.episode_periods:
            raise episode_over("hss/RLAlloc-v0")
        if self.action_mode == "factored":
            action = tuple(check_multidiscrete_action(action, self.action_space.nvec).tolist())
        else:
            action = check_discrete_action(action, self.action_space.n)
        self._replay_log("step", action)
        valid = self._apply(action)
        lo, hi = self._next_req, int(self._bounds[self._period])
        if hi > lo:
            self._ssd.submit(self._t[lo:hi], self._stream[lo:hi], self._offset[lo:hi],
                             self._size[lo:hi], self._write[lo:hi])
        self._next_req = hi
        self._period += 1
        ws = self._ssd.run_until(self.period_us * self._period)
        self._last = ws
        self._unit_busy = np.asarray(ws.unit_busy, dtype=np.float64)
        self._unit_valid = np.asarray(ws.unit_valid_frac, dtype=np.float64)
        offered = hi - lo
        done = int(np.sum(ws.completed))
        tail = self._tail(ws)
        iops_n = done / max(offered, 1)
        lat_n = math.log10(1.0 + tail / self.lat_ref_us)
        reward = self.reward_weights[0] * iops_n - self.reward_weights[1] * lat_n
        n = self.n_streams
        st, pg, wr = self._stream[lo:hi], self._pages[lo:hi], self._write[lo:hi]
        row = self._demand_hist[(self._period - 1) % self.demand_periods]
        row[0] = np.bincount(st[~wr], weights=pg[~wr], minlength=n)[:n]
        row[1] = np.bincount(st[wr], weights=pg[wr], minlength=n)[:n]
        demand_rd, demand_wr = self._demand_hist.sum(axis=0) / min(self._period, self.demand_periods)
        obs = self._observe(ws, demand_rd, demand_wr)
        truncated = self._period >= self.episode_periods
        info = {"period": self._period, "invalid_action": not valid, "offered": offered,
                "completed": done, "iops": done / (self.period_us * 1e-6), "tail_us": tail,
                "read_tx": np.asarray(ws.read_tx).tolist(), "write_tx": np.asarray(ws.write_tx).tolist(),
                "demand_read_tx": demand_rd.tolist(), "demand_write_tx": demand_wr.tolist(),
                "backlog": np.asarray(ws.backlog).tolist(), "gc_runs": int(np.sum(ws.gc_runs)),
                "conflicts": int(np.sum(ws.conflicts)),
                "chips": [int(len(a)) for a in self._alloc]}
        if truncated:
            info["metrics"] = self.metrics()
        return obs, float(reward), False, truncated, info

    def _tail(self, ws: Any) -> float:
        p = np.asarray(ws.lat_p99_us if self.tail == "p99" else ws.lat_p999_us, dtype=np.float64)
        p = p[np.isfinite(p)]
        return float(p.max()) if len(p) else 0.0

    def _observe(self, ws: Any, rd: np.ndarray, wr: np.ndarray) -> np.ndarray:
        n, nch, cpc = self.n_streams, self.n_channels, self.chips_per_channel
        per = np.empty((n, 2 + nch), dtype=np.float64)
        cost_rd, cost_wr = rd * self.profile.read_us, wr * self.profile.program_us
        total = float(cost_rd.sum() + cost_wr.sum())
        per[:, 0] = cost_rd / total if total > 0 else 0.0
        per[:, 1] = cost_wr / total if total > 0 else 0.0
        for s, units in enumerate(self._alloc):
            per[s, 2:] = np.bincount(units // cpc, minlength=nch) / cpc
        obs = np.concatenate([[n / MAX_STREAMS_SCALE], per.ravel(), self._config,
                              np.asarray(ws.channel_busy, dtype=np.float64),
                              np.asarray(ws.unit_busy, dtype=np.float64),
                              np.asarray(ws.unit_valid_frac, dtype=np.float64)])
        return np.clip(np.nan_to_num(obs, nan=0.0), 0.0, 1.0).astype(np.float32)

    def metrics(self) -> dict[str, float]:
        """Whole-episode metrics so far: IOPS, latency mean/p99/p99.9 (us), GC runs, I/O conflicts,
        write amplification, requests offered and completed."""
        tot = self._ssd.totals()
        lat = np.asarray(self._ssd.latencies(), dtype=np.float64)
        elapsed_s = self.period_us * self._period * 1e-6
        q = np.percentile(lat, [99, 99.9]) if len(lat) else (math.nan, math.nan)
        return {"iops": float(len(lat) / elapsed_s) if elapsed_s else 0.0,
                "lat_mean_us": float(lat.mean()) if len(lat) else math.nan,
                "p99_us": float(q[0]), "p999_us": float(q[1]),
                "gc_runs": float(np.sum(tot.gc_runs)), "conflicts": float(np.sum(tot.conflicts)),
                "write_amplification": float(tot.write_amplification),
                "offered": float(self._next_req), "completed": float(len(lat))}

    def provenance(self) -> dict[str, Any]:
        """What this episode ran on: profile, streams and their generator/trace sources."""
        return {"profile": self.profile.name, "profile_scale": self.profile.scale,
                "profile_hash": self.profile.digest(),
                "blocks_per_plane": self.profile.blocks_per_plane,
                "period_us": self.period_us, "streams": self.streams, "sources": self._provenance}

    def render(self) -> "str | np.ndarray | None":
        """``"ansi"``: chips per stream and the period's tail latency; ``"rgb_array"``: the chip
        map (:meth:`_render_rgb`); None without a render mode."""
        if self.render_mode == "rgb_array":
            return self._render_rgb()
        if self.render_mode != "ansi" or self._ssd is None:
            return None
        return (f"period {self._period}/{self.episode_periods}: chips per stream "
                f"{[len(a) for a in self._alloc]}, tail {self._tail(self._last):.0f} us")

    def _render_rgb(self) -> np.ndarray:
        """The SSD's chips as a grid (one row per channel), each coloured by the stream(s) it is
        allocated to (stripes when shared, grey when free), darker the busier it was in the last
        period; beside it, each stream's chip count as a bar of all chips. What one watches to
        see the agent move chips towards the streams that queue."""
        if self._ssd is None:
            return render.message("RLALLOC: NOT RESET", 240, 480)
        nch, cpc, n = self.n_channels, self.chips_per_channel, self.n_streams
        cell = max(4, min(24, 200 // max(nch, cpc)))
        grid_h = nch * cell
        height = max(grid_h, 16 * n) + 40
        cv = render.Canvas(height, 480)
        cv.text(8, 6, f"PERIOD {self._period}/{self.episode_periods}  TAIL {self._tail(self._last):.0f} US")
        owners: list[list[int]] = [[] for _ in range(self.n_units)]
        for s_, units in enumerate(self._alloc):
            for u in units.tolist():
                owners[u].append(s_)
        x0, y0 = 8, 28
        for u in range(self.n_units):
            x, y = x0 + (u % cpc) * cell, y0 + (u // cpc) * cell
            who = owners[u]
            shade = 0.6 * (1.0 - float(np.clip(self._unit_busy[u], 0.0, 1.0)))
            if not who:
                cv.rect(x, y, cell - 1, cell - 1, render.GREY)
                continue
            w = (cell - 1) / len(who)
            for k, s_ in enumerate(who):
                cv.rect(x + k * w, y, w, cell - 1, render.tint(render.color(s_), shade))
        cv.text(x0, y0 + grid_h + 2, "ROW = CHANNEL, DARK = BUSY", scale=1)
        px = x0 + cpc * cell + 16
        bar_w = 480 - px - 8 - 88
        for s_, units in enumerate(self._alloc):
            y = y0 + 16 * s_
            cv.text(px, y + 2, f"S{s_} {os.path.basename(self.streams[s_])[:6]}", scale=1)
            cv.hbar(px + 44, y, bar_w, 10, len(units) / self.n_units, render.color(s_))
            cv.text(px + 48 + bar_w, y + 2, f"{len(units)} CHIPS", scale=1)
        return cv.img

    def close(self) -> None:
        if self._ssd is not None:
            self._ssd.close()
            self._ssd = None
        self._closed = True

    def _replay_fingerprint(self) -> Any:
        if self._ssd is None:
            return None
        return (self._period, self._next_req, [a.tolist() for a in self._alloc], repr(self.metrics()))


def rlalloc_env(**kwargs: Any) -> RLAllocEnv:
    """Entry point of ``hss/RLAlloc-v0``."""
    return RLAllocEnv(**kwargs)


rlalloc_env.metadata = RLAllocEnv.metadata  # type: ignore[attr-defined]  # read by gym.make
