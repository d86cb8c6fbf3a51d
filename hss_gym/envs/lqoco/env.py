"""The L-QoCo environment (Gymnasium, ``hss/LQoCo-v0``) of :mod:`hss_gym.lqoco_v0`.

Documented there (Description, Action Space, Observation Space, Rewards, Starting State, Episode
End, Arguments, Version History); get it with ``lqoco_v0.env(...)`` or
``gymnasium.make("hss/LQoCo-v0", ...)``.

The per-period logic (arrivals, the simulator's period, the state, the reward, the history) runs
in C (``backends/lqoco/lqoco_env.c``, one ``_lqoco.Env`` per episode), the same code the native
vector env (:mod:`hss_gym.envs.lqoco.vector`) steps in batches; this class checks the arguments,
computes each workload phase's parameters once (:meth:`LQoCoEnv._phase_table`) and builds the
infos, the observations and the measurements.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from hss_gym import render
from hss_gym.backends import _lqoco
from hss_gym.envs._contract import (ReplayCopy, check_discrete_action, check_int, check_real, check_reals,
                                    env_closed, episode_over, not_reset)
from hss_gym.envs.lqoco.workloads import BURSTY, Burst, Phase, parse_workload, scale_trace
from hss_gym.backends.lqoco.model import CONFIGS, CacheSim, CacheSpec, Tier, TierSpec
from hss_gym.render import RENDER_MODES, check_render_mode

W_NAMES = ("ExtremelyLow", "Low", "Mid", "High")
P_NAMES = ("Low", "Mid", "High")
B_NAMES = ("Overuse", "Fulluse", "Underuse")
ACTION_NAMES = ("SlowDecrease", "FastDecrease", "Keep", "SlowIncrease", "FastIncrease")
#: Table 2 values per discrete level
V_W, V_P, V_B = (0, 0, 1, -1), (-1, 0, -1), (-1, 1, 0)
N_STATES = 36
#: history()'s series, in the C env's order (lqoco_env.h LQ_H_*)
HIST_KEYS = ("W", "rate_mbps", "admitted_mbps", "flush_mbps", "throughput_mbps", "full_s", "bypassed_mbps",
             "reward")
#: the float infos of every step and reset, then those of steps only, in the order of the C env's
#: values after (reward, truncated, t, state, phase) (lqoco_env.h lq_env_info)
RESET_INFO = ("W", "P", "B_use", "btlbw_mbps", "rate_mbps", "nominal_mbps")
STEP_INFO = ("admitted_mbps", "flush_mbps", "flushed_mbps", "bypassed_mbps", "throughput_mbps", "full_s", "gc_s",
             "throttled_mb")


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
        self._core: Any = None  # the episode's _lqoco.Env (reset() makes one)
        self._table: tuple[np.ndarray, list[np.ndarray | None]] | None = None  # _phase_table(), once
        self._closed = False  # close() has run, and no reset() since

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._replay_reset(seed=seed, options=options)
        self._closed = False
        super().reset(seed=seed)
        seed_rng = int(self.np_random.integers(2**62))  # the arrivals' random.Random seed
        sim = CacheSim(self.cache_spec, self.tier, self.period_s, self.substeps, self.bucket_s, self.bypass_us)
        if self._table is None:
            self._table = self._phase_table(sim)
        table, traces = self._table
        self._core = _lqoco.Env(sim.core, table, traces, seed_rng, self.periods, self.period_s, self.load, sim.C,
                                self.init_rate, self.magnitudes, self.w_bins, self.p_tol, self.b_band,
                                self.bdp_window, self.weights, self.reward_kind == "eq8")
        self.sim = sim
        v = self._core.values()
        return self._obs(v), self._info(v, False)

    def step(self, action: Any):
        self._check_running()
        a = check_discrete_action(action, 5, f"action ({', '.join(ACTION_NAMES)})")
        self._replay_log("step", a)
        v = self._core.step(a)
        return self._obs(v), v[0], False, v[1], self._info(v, True)

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
        v = self._core.step_rate(r * 1e6)
        return self._obs(v), v[0], False, v[1], self._info(v, True)

    def _replay_fingerprint(self) -> Any:
        if self.sim is None:
            return None
        return (self.t, repr(self.history()), repr(self.sim.hist))

    # the state of the episode, kept by the C env
    @property
    def t(self) -> int:
        """Periods run in this episode."""
        return self._core.t

    @property
    def W(self) -> float:
        """The watermark W_t (dirty fraction of the cache)."""
        return self._core.W

    @property
    def P(self) -> float:
        """P_t = (I_t - O_t) / O_t."""
        return self._core.P

    @property
    def B(self) -> float:
        """I_t / BtlBw."""
        return self._core.B

    @property
    def rate(self) -> float:
        """The admitted rate I_t, bytes/s."""
        return self._core.rate

    @property
    def btlbw(self) -> float:
        """BtlBw, the max of O_t over ``bdp_window`` periods, bytes/s."""
        return self._core.btlbw

    def render(self) -> "str | np.ndarray | None":
        """``"ansi"``: the state (W, P, B and their levels) and the rate; ``"rgb_array"``: the
        cache tier's load (:meth:`_render_rgb`); None without a render mode."""
        if self.render_mode == "rgb_array":
            return self._render_rgb()
        if self.render_mode != "ansi" or self.sim is None:
            return None
        w, p, b = self._core.levels
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
        w, p, b = self._core.levels
        cv.text(8, 6, f"T {self.t}/{self.periods}  {self._mix_name()}")
        cv.text(8, 20, f"STATE W {W_NAMES[w]}, P {P_NAMES[p]}, B {B_NAMES[b]}", scale=1)
        over = self.W >= self.w_bins[2]
        cv.text(8, 35, "W")
        cv.hbar(40, 32, 280, 14, self.W, render.RED if over else render.color(0), marks=self.w_bins)
        cv.text(328, 35, f"{self.W:.2f}", scale=1)
        h = self.history()
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
        return self.phases[self._core.phase].mix.name

    def _phase_table(self, sim: CacheSim) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """What the C env needs of each workload phase (``_lqoco.Env``'s table: the mix's costs,
        the nominal flush bandwidth, the rate bounds, the load process; the binned trace), as this
        env computed it at each phase start before its logic moved to C. It depends on the
        constructor's arguments only: computed at the first reset (``sim``: a fresh one)."""
        rows, traces = [], []
        lo, hi = self.rate_bounds
        for ph in self.phases:
            sim.set_mix(ph.mix)
            r = ph.mix.read
            ratio = r / (1 - r) if r < 1 else 0.0
            t = sim.tier
            nominal = 1e6 / (sim.flush_cost(0.5 * sim.C) * t.gc + ratio * (1 - self.cache_spec.read_hit) * sim.rd_cost)
            base = BURSTY if ph.mix.name.startswith("R-") else {}
            burst = Burst(**{**base, **self.burst_opts})
            trace, periods = None, ph.periods
            if ph.trace_bins is not None:
                wb_mean = float(ph.trace_bins[1].mean())
                if self.trace_speedup == "auto":
                    f = self.load * nominal / max(wb_mean, 1.0)
                elif isinstance(self.trace_speedup, (int, float)) and self.trace_speedup > 0:
                    f = float(self.trace_speedup)
                else:
                    raise ValueError(f"trace_speedup must be 'auto' or a number > 0, got {self.trace_speedup!r}")
                trace = np.array(scale_trace(ph, f * self.period_s).trace_bins, dtype=np.float64)
                periods = trace.shape[1]
            rows.append((*sim.mix_args, nominal, ratio, burst.depth * sim.io, lo * nominal, hi * nominal,
                         burst.on_s / (burst.on_s + burst.off_s), 1.0 / burst.on_s, 1.0 / burst.off_s,
                         burst.high, burst.low, burst.wiggle, periods))
            traces.append(trace)
        return np.array(rows, dtype=np.float64), traces

    def _obs(self, v: tuple) -> Any:
        """The observation of the C env's values ``v`` (``_lqoco.Env.values()``)."""
        if self.obs_kind == "discrete":
            return v[3]
        return np.array([min(v[5], 1.0), min(max(v[6], -1.0), 10.0), min(v[7], 10.0)], dtype=np.float32)

    def _info(self, v: tuple, step: bool) -> dict[str, Any]:
        """The info of the C env's values ``v``; ``step``: with the period's measurements."""
        state = v[3]
        w, p, b = decode_state(state)
        info = {"t": v[2], "W": v[5], "P": v[6], "B_use": v[7], "btlbw_mbps": v[8], "rate_mbps": v[9],
                "nominal_mbps": v[10], "state": state, "levels": (W_NAMES[w], P_NAMES[p], B_NAMES[b]),
                "category": category(w, p, b), "workload": self.phases[v[4]].mix.name}
        if step:
            info.update(zip(STEP_INFO, v[11:]))
        return info

    # ------------------------------------------------------------------ measurements
    def history(self) -> dict[str, list[float]]:
        """Per-period series of this episode (copies): W, rate, admitted, flush, throughput, ..."""
        return {k: self._core.history(i) for i, k in enumerate(HIST_KEYS)}

    def phase_marks(self) -> list[tuple[int, str]]:
        """(period, workload) at each workload change."""
        return [(t, self.phases[i].mix.name) for t, i in self._core.marks()]

    def metrics(self) -> dict[str, float]:
        """The paper's measurements over the episode so far, from the simulated requests."""
        if self.sim is None:
            raise RuntimeError("call reset() first")
        h = self.history()
        thr = np.asarray(h["throughput_mbps"])
        mean = float(thr.mean()) if len(thr) else float("nan")
        jitter = float(thr.std() / mean) if len(thr) and mean > 0 else float("nan")
        full = float(np.sum(h["full_s"]))
        return {"throughput_mbps": mean, "jitter": jitter,
                "mean_latency_ms": self.sim.mean_latency_us / 1e3,
                "p99_latency_ms": self.sim.latency_quantile(0.99) / 1e3,
                "p999_latency_ms": self.sim.latency_quantile(0.999) / 1e3,
                "cache_full_s": full, "cache_full_frac": full / max(self.t * self.period_s, 1e-9),
                "bypassed_frac": float(np.sum(h["bypassed_mbps"]) / max(thr.sum(), 1e-9)),
                "periods": float(self.t)}
