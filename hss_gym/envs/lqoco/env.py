"""The L-QoCo environment (Gymnasium, ``hss/LQoCo-v0``) of :mod:`hss_gym.lqoco_v0`.

Documented there (Description, Action Space, Observation Space, Rewards, Starting State, Episode
End, Arguments, Version History); get it with ``lqoco_v0.env(...)`` or
``gymnasium.make("hss/LQoCo-v0", ...)``.
"""

from __future__ import annotations

import math
import random
from dataclasses import fields, replace
from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from hss_gym import render
from hss_gym.envs._contract import (ReplayCopy, check_discrete_action, check_int, check_real, check_reals,
                                    env_closed, episode_over, not_reset)
from hss_gym.envs.lqoco.workloads import BURSTY, Arrivals, Burst, Phase, parse_workload, scale_trace
from hss_gym.backends.lqoco.model import CONFIGS, CacheSim, CacheSpec, Tier, TierSpec
from hss_gym.render import RENDER_MODES, check_render_mode

W_NAMES = ("ExtremelyLow", "Low", "Mid", "High")
P_NAMES = ("Low", "Mid", "High")
B_NAMES = ("Overuse", "Fulluse", "Underuse")
ACTION_NAMES = ("SlowDecrease", "FastDecrease", "Keep", "SlowIncrease", "FastIncrease")
#: Table 2 values per discrete level
V_W, V_P, V_B = (0, 0, 1, -1), (-1, 0, -1), (-1, 1, 0)
N_STATES = 36


def state_index(w: int, p: int, b: int) -> int:
    return (w * 3 + p) * 3 + b


def decode_state(s: int) -> tuple[int, int, int]:
    """(Ŵ, P̂, B̂) of a discrete state index."""
    return s // 9, (s // 3) % 3, s % 3


def category(w: int, p: int, b: int) -> str:
    """Table 1: "better", "worse" or "general"."""
    if w == 2 and p == 1 and b == 1:
        return "better"
    if w == 3 and p in (0, 2) and b == 0:
        return "worse"
    return "general"


def reward_of(w: int, p: int, b: int, weights: Sequence[float], kind: str = "signed") -> float:
    """Eq. 8 reward of the discrete state (w, p, b); see the env docstring for ``kind``."""
    fw, fp, fb = weights
    vw, vp, vb = V_W[w], V_P[p], V_B[b]
    if kind == "eq8":
        return (vw * vw / 9.0 - 1) * fw + (vp * vp / 4.0 - 1) * fp + (vb * vb / 4.0 - 1) * fb
    return fw * vw + fp * vp + fb * vb


def _override(spec: Any, opts: dict[str, Any] | None, what: str) -> Any:
    if not opts:
        return spec
    names = {f.name for f in fields(spec)}
    bad = sorted(set(opts) - names)
    if bad:
        raise ValueError(f"{what} option {bad[0]!r} is unknown (valid: {', '.join(sorted(names))})")
    return replace(spec, **opts)


class LQoCoEnv(ReplayCopy, gym.Env):
    """Cache-overload control, ``lqoco_v0.raw_env``; see :mod:`hss_gym.lqoco_v0`. ``copy.deepcopy`` and ``pickle`` work by
    replay (:class:`hss_gym.envs._contract.ReplayCopy`)."""

    _replay_pre = ("_np_random", "_np_random_seed")
    _replay_extra = ("spec",)

    # render_fps: playback rate of a recorded episode (one frame per control period)
    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 10}

    def __init__(self, config: str = "oceanstor", workload: Any = "S-13", periods: int = 1500,
                 period_s: float = 1.0, substeps: int = 4, observation: str = "discrete",
                 reward: str = "signed", weights: Sequence[float] = (0.5, 0.25, 0.25),
                 magnitudes: Sequence[float] = (-0.01, -0.03, 0.0, 0.01, 0.03),
                 bypass_us: float | None = None, bucket_s: float = 0.1, init_rate: float = 1.0,
                 rate_bounds: Sequence[float] = (0.05, 20.0), load: float = 1.0,
                 burst: dict[str, Any] | None = None, cache: dict[str, Any] | None = None,
                 tier: dict[str, Any] | None = None,
                 w_bins: Sequence[float] = (0.05, 0.3, 0.7), p_tol: float = 0.05,
                 b_band: Sequence[float] = (0.9, 1.05), bdp_window: int = 10,
                 trace_speedup: Any = "auto", render_mode: str | None = None) -> None:
        if config not in CONFIGS:
            raise ValueError(f"unknown config {config!r}; valid: {', '.join(CONFIGS)}")
        if observation not in ("discrete", "raw"):
            raise ValueError(f"observation must be 'discrete' or 'raw', got {observation!r}")
        if reward not in ("signed", "eq8"):
            raise ValueError(f"reward must be 'signed' or 'eq8', got {reward!r}")
        weights = check_reals("weights (f_W, f_P, f_B)", weights, 3, low=0.0)
        if abs(sum(weights) - 1) > 1e-9:
            raise ValueError(f"weights (f_W, f_P, f_B) must be 3 numbers >= 0 summing to 1, got {weights!r}")
        magnitudes = check_reals("magnitudes", magnitudes, 5, low=-1.0, low_open=True)
        if magnitudes[2] != 0:
            raise ValueError(f"magnitudes must be 5 adjustment rates > -1 with Keep (index 2) = 0, "
                             f"got {magnitudes!r}")
        for name, v in (("periods", periods), ("substeps", substeps), ("bdp_window", bdp_window)):
            check_int(name, v, 1)
        for name, v in (("period_s", period_s), ("bucket_s", bucket_s), ("init_rate", init_rate),
                        ("load", load)):
            check_real(name, v, 0.0, low_open=True)
        w_bins = check_reals("w_bins", w_bins, 3, low=0.0, high=1.0, low_open=True)
        if not w_bins[0] < w_bins[1] < w_bins[2]:
            raise ValueError(f"w_bins must be 3 increasing cut points in (0, 1], got {w_bins!r}")
        b_band = check_reals("b_band", b_band, 2, low=0.0, low_open=True)
        if not b_band[0] <= 1 <= b_band[1]:
            raise ValueError(f"b_band must be (low <= 1, high >= 1), got {b_band!r}")
        rate_bounds = check_reals("rate_bounds", rate_bounds, 2, low=0.0, low_open=True)
        if not rate_bounds[0] < rate_bounds[1]:
            raise ValueError(f"rate_bounds must be (low, high) with 0 < low < high, got {rate_bounds!r}")
        p_tol = check_real("p_tol", p_tol, 0.0)
        if bypass_us is not None:
            bypass_us = check_real("bypass_us", bypass_us, 0.0)
        if not (isinstance(trace_speedup, str) and trace_speedup == "auto"):
            check_real("trace_speedup ('auto' or a number)", trace_speedup, 0.0, low_open=True)
        check_render_mode(render_mode)
        self.config, self.workload = config, workload
        self.periods, self.period_s, self.substeps = periods, float(period_s), substeps
        self.obs_kind, self.reward_kind = observation, reward
        self.weights = tuple(float(x) for x in weights)
        self.magnitudes = tuple(float(x) for x in magnitudes)
        self.bypass_us, self.bucket_s, self.init_rate = bypass_us, float(bucket_s), float(init_rate)
        self.rate_bounds, self.load = tuple(rate_bounds), float(load)
        self.burst_opts = dict(burst or {})
        Burst(**self.burst_opts)  # validate now
        self.cache_spec: CacheSpec = _override(CONFIGS[config]["cache"], cache, "cache")
        self.tier_spec: TierSpec = _override(CONFIGS[config]["tier"], tier, "tier")
        self.tier = Tier(self.tier_spec)
        self.w_bins, self.p_tol, self.b_band = tuple(w_bins), float(p_tol), tuple(b_band)
        self.bdp_window, self.trace_speedup = bdp_window, trace_speedup
        self.render_mode = render_mode
        self.phases: list[Phase] = parse_workload(workload, periods)
        self.action_space = gym.spaces.Discrete(5)
        if observation == "discrete":
            self.observation_space = gym.spaces.Discrete(N_STATES)
        else:
            self.observation_space = gym.spaces.Box(np.array([0, -1, 0], np.float32),
                                                    np.array([1, 10, 10], np.float32), dtype=np.float32)
        self.sim: CacheSim | None = None
        self._closed = False  # close() has run, and no reset() since

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._replay_reset(seed=seed, options=options)
        self._closed = False
        super().reset(seed=seed)
        rng = random.Random(int(self.np_random.integers(2**62)))
        self.sim = CacheSim(self.cache_spec, self.tier, self.period_s, self.substeps,
                            self.bucket_s, self.bypass_us)
        self._rng = rng
        self._phase_i, self._phase_left = -1, 0
        self._next_phase()
        self.rate = self.init_rate * self._nominal
        self.t = 0
        self._flush_hist: list[float] = []
        self.W = self.P = 0.0
        self.B = 1.0
        self.btlbw = self._nominal
        self._state = (0, 1, 1)
        self._hist: dict[str, list[float]] = {k: [] for k in (
            "W", "rate_mbps", "admitted_mbps", "flush_mbps", "throughput_mbps", "full_s",
            "bypassed_mbps", "reward")}
        self._phase_marks: list[tuple[int, str]] = [(0, self._mix_name())]
        return self._obs(), self._info(None)

    def step(self, action: Any):
        self._check_running()
        a = check_discrete_action(action, 5, f"action ({', '.join(ACTION_NAMES)})")
        self._replay_log("step", a)
        return self._advance(self.rate * (1.0 + self.magnitudes[a]))

    def close(self) -> None:
        """Nothing to let go of; a later step() says the env is closed (until reset())."""
        self._closed = True

    def _check_running(self) -> None:
        if self._closed:
            raise env_closed("hss/LQoCo-v0")
        if self.sim is None:
            raise not_reset("hss/LQoCo-v0")
        if self.t >= self.periods:
            raise episode_over("hss/LQoCo-v0")

    def step_rate(self, rate_mbps: float):
        """Step with I_{t+1} = ``rate_mbps`` (MB/s, clipped to ``rate_bounds``; ``inf`` = no
        token limit at all, the "no control" system)."""
        self._check_running()
        r = check_real("rate_mbps", rate_mbps, 0.0, low_open=True, allow_inf=True)
        self._replay_log("step_rate", r)
        return self._advance(r * 1e6)

    def _replay_fingerprint(self) -> Any:
        if self.sim is None:
            return None
        return (self.t, repr(self._hist), repr(self.sim.hist))

    def render(self) -> "str | np.ndarray | None":
        """``"ansi"``: the state (W, P, B and their levels) and the rate; ``"rgb_array"``: the
        cache tier's load (:meth:`_render_rgb`); None without a render mode."""
        if self.render_mode == "rgb_array":
            return self._render_rgb()
        if self.render_mode != "ansi" or self.sim is None:
            return None
        w, p, b = self._state
        return (f"t={self.t} W={self.W:.3f} ({W_NAMES[w]}) P={self.P:+.3f} ({P_NAMES[p]}) "
                f"B={self.B:.2f} ({B_NAMES[b]}) I={self.rate / 1e6:.1f} MB/s")

    #: periods shown in the rgb_array history strips
    RENDER_PERIODS = 200

    def _render_rgb(self) -> np.ndarray:
        """A 240 x 400 picture of the cache tier: the watermark W (dirty fraction of the cache)
        with the level cut points ``w_bins`` (red once past the last, the overload threshold), the
        admitted rate I and the flush bandwidth O on one scale, and the last
        :attr:`RENDER_PERIODS` periods of W and of throughput: what one watches to see a
        controller keep the cache below overload without starving the host."""
        if self.sim is None:
            return render.message("L-QOCO: NOT RESET", 240, 400)
        cv = render.Canvas(240, 400)
        w, p, b = self._state
        cv.text(8, 6, f"T {self.t}/{self.periods}  {self._mix_name()}")
        cv.text(8, 20, f"STATE W {W_NAMES[w]}, P {P_NAMES[p]}, B {B_NAMES[b]}", scale=1)
        over = self.W >= self.w_bins[2]
        cv.text(8, 35, "W")
        cv.hbar(40, 32, 280, 14, self.W, render.RED if over else render.color(0), marks=self.w_bins)
        cv.text(328, 35, f"{self.W:.2f}", scale=1)
        h = self._hist
        admitted = h["admitted_mbps"][-1] if h["admitted_mbps"] else 0.0
        flush = h["flush_mbps"][-1] if h["flush_mbps"] else 0.0
        top = max(admitted, flush, self.btlbw / 1e6, 1e-9) * 1.25
        for row, (name, val, c) in enumerate((("I", admitted, render.color(1)), ("O", flush, render.color(2)))):
            y = 54 + 18 * row
            cv.text(8, y + 3, name)
            cv.hbar(40, y, 280, 14, val / top, c, marks=(self.btlbw / 1e6 / top,))
            cv.text(328, y + 3, f"{val:.0f} MB/S", scale=1)
        k = self.RENDER_PERIODS
        cv.text(8, 94, f"W, LAST {k} PERIODS (LINE: OVERLOAD)", scale=1)
        cv.strip(8, 102, 384, 56, h["W"][-k:], render.color(0), slots=k)
        cv.rect(8, 102 + 56 * (1 - self.w_bins[2]), 384, 1, render.RED)
        thr = np.asarray(h["throughput_mbps"][-k:], dtype=np.float64)
        peak = float(thr.max()) if len(thr) and thr.max() > 0 else 1.0
        cv.text(8, 166, f"THROUGHPUT, LAST {k} PERIODS (TOP {peak:.0f} MB/S)", scale=1)
        cv.strip(8, 174, 384, 56, thr / peak, render.color(2), slots=k)
        return cv.img

    # ------------------------------------------------------------------ dynamics
    def _mix_name(self) -> str:
        return self.phases[self._phase_i].mix.name

    def _next_phase(self) -> None:
        self._phase_i = (self._phase_i + 1) % len(self.phases)
        ph = self.phases[self._phase_i]
        sim = self.sim
        assert sim is not None
        sim.set_mix(ph.mix)
        r = ph.mix.read
        ratio = r / (1 - r) if r < 1 else 0.0
        t = sim.tier
        self._nominal = 1e6 / (sim.flush_cost(0.5 * sim.C) * t.gc
                               + ratio * (1 - self.cache_spec.read_hit) * sim.rd_cost)
        self._read_ratio = ratio
        base = BURSTY if ph.mix.name.startswith("R-") else {}
        self.burst = Burst(**{**base, **self.burst_opts})
        self.arrivals = Arrivals(self.burst, self._rng)
        self._trace = None
        if ph.trace_bins is not None:
            wb_mean = float(ph.trace_bins[1].mean())
            if self.trace_speedup == "auto":
                f = self.load * self._nominal / max(wb_mean, 1.0)
            elif isinstance(self.trace_speedup, (int, float)) and self.trace_speedup > 0:
                f = float(self.trace_speedup)
            else:
                raise ValueError(f"trace_speedup must be 'auto' or a number > 0, got {self.trace_speedup!r}")
            self._trace = scale_trace(ph, f * self.period_s).trace_bins
            self._phase_left = len(self._trace[0])
        else:
            self._phase_left = ph.periods
        self._trace_i = 0

    def _advance(self, new_rate: float):
        if self.sim is None:
            raise RuntimeError("call reset() before step()")
        lo, hi = self.rate_bounds
        if not math.isinf(new_rate):
            new_rate = min(max(new_rate, lo * self._nominal), hi * self._nominal)
        self.rate = new_rate
        sim, ps = self.sim, self.period_s
        hq = self.burst.depth * sim.io
        if self._trace is not None:
            rb, wb, rs, ws = self._trace
            i = self._trace_i
            st = sim.period(new_rate, rb[i] / ps, wb[i] / ps, hq, float(rs[i]), float(ws[i]))
            self._trace_i += 1
        else:
            wr = self.load * self.arrivals.demand(self._nominal)
            st = sim.period(new_rate, wr * self._read_ratio, wr, hq)
        self.t += 1
        self._phase_left -= 1
        # state (W_t, P_t, B_t)
        C = sim.C
        self.W = sim.dirty / C
        I, O = st.admitted / ps, st.flush_cap / ps
        self.P = (I - O) / max(O, 1.0)
        fh = self._flush_hist
        fh.append(O)
        if len(fh) > self.bdp_window:
            del fh[0]
        self.btlbw = max(max(fh), 1.0)
        self.B = I / self.btlbw
        self._state = self._discretise()
        r = reward_of(*self._state, self.weights, self.reward_kind)
        h = self._hist
        h["W"].append(self.W)
        h["rate_mbps"].append(self.rate / 1e6)
        h["admitted_mbps"].append(I / 1e6)
        h["flush_mbps"].append(O / 1e6)
        h["throughput_mbps"].append(st.throughput / ps / 1e6)
        h["full_s"].append(st.full_s)
        h["bypassed_mbps"].append(st.bypassed / ps / 1e6)
        h["reward"].append(r)
        self._last = st
        truncated = self.t >= self.periods
        if self._phase_left <= 0 and not truncated:
            self._next_phase()
            self._phase_marks.append((self.t, self._mix_name()))
        return self._obs(), r, False, truncated, self._info(st)

    def _discretise(self) -> tuple[int, int, int]:
        wb = self.w_bins
        w = 0 if self.W < wb[0] else 1 if self.W < wb[1] else 2 if self.W < wb[2] else 3
        p = 0 if self.P < -self.p_tol else 1 if self.P <= self.p_tol else 2
        lo, hi = self.b_band
        b = 0 if self.B > hi else 1 if self.B >= lo else 2
        return w, p, b

    def _obs(self) -> Any:
        if self.obs_kind == "discrete":
            return state_index(*self._state)
        return np.array([min(self.W, 1.0), min(max(self.P, -1.0), 10.0), min(self.B, 10.0)],
                        dtype=np.float32)

    def _info(self, st: Any) -> dict[str, Any]:
        w, p, b = self._state
        ps = self.period_s
        info = {"t": self.t, "W": self.W, "P": self.P, "B_use": self.B,
                "btlbw_mbps": self.btlbw / 1e6, "rate_mbps": self.rate / 1e6,
                "nominal_mbps": self._nominal / 1e6, "state": state_index(w, p, b),
                "levels": (W_NAMES[w], P_NAMES[p], B_NAMES[b]), "category": category(w, p, b),
                "workload": self._mix_name()}
        if st is not None:
            info.update(admitted_mbps=st.admitted / ps / 1e6, flush_mbps=st.flush_cap / ps / 1e6,
                        flushed_mbps=st.flushed / ps / 1e6, bypassed_mbps=st.bypassed / ps / 1e6,
                        throughput_mbps=st.throughput / ps / 1e6, full_s=st.full_s,
                        gc_s=st.gc_s, throttled_mb=st.throttled / 1e6)
        return info

    # ------------------------------------------------------------------ measurements
    def history(self) -> dict[str, list[float]]:
        """Per-period series of this episode (copies): W, rate, admitted, flush, throughput, ..."""
        return {k: list(v) for k, v in self._hist.items()}

    def phase_marks(self) -> list[tuple[int, str]]:
        """(period, workload) at each workload change."""
        return list(self._phase_marks)

    def metrics(self) -> dict[str, float]:
        """The paper's measurements over the episode so far, from the simulated requests."""
        if self.sim is None:
            raise RuntimeError("call reset() first")
        thr = np.asarray(self._hist["throughput_mbps"])
        mean = float(thr.mean()) if len(thr) else float("nan")
        jitter = float(thr.std() / mean) if len(thr) and mean > 0 else float("nan")
        full = float(np.sum(self._hist["full_s"]))
        return {"throughput_mbps": mean, "jitter": jitter,
                "mean_latency_ms": self.sim.mean_latency_us / 1e3,
                "p99_latency_ms": self.sim.latency_quantile(0.99) / 1e3,
                "p999_latency_ms": self.sim.latency_quantile(0.999) / 1e3,
                "cache_full_s": full, "cache_full_frac": full / max(self.t * self.period_s, 1e-9),
                "bypassed_frac": float(np.sum(self._hist["bypassed_mbps"]) / max(thr.sum(), 1e-9)),
                "periods": float(self.t)}
