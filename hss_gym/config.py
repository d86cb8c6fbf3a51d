"""HSS configurations: which devices, fastest first, and how much of each the HSS may use.

The papers' workloads are far larger than their fast device, so by default every device but the
last gets a *fraction of the workload's footprint* (distinct 4 KiB pages); the last device is the
home device, large enough for everything. Named configurations (Harmonia Table 3):

==========  ======================  ==========================
name        devices                 default capacity fractions
==========  ======================  ==========================
perf_opt    H + M                   H: 0.1
cost_opt    H + L                   H: 0.1
pmem        PMEM + H                PMEM: 0.1
tri         H + M + L               H: 0.1, M: 0.3
quad        H + M + LSSD + L        H: 0.1, M: 0.2, LSSD: 0.3
==========  ======================  ==========================

Device names are built-in profile ids or profile file paths (see :mod:`hss_gym.backends.sim`).

A configuration is resolved from its name (or device list) once, by the outermost entry point,
and passed down as the :class:`HSSConfig` object: a harness job
(:func:`hss_gym.benchmarks.problems.hss.run_job`, which also hashes that object for provenance),
``hss_v0.parallel_env``/``gym.make`` (the env's ``cfg``), :func:`hss_gym.replay.replay`, ``hss-gym
replay``. Field overrides (``fast_fraction``, ``preloaded``, ..., e.g. a policy's ``env_options``)
make a copy with :meth:`HSSConfig.with_options` that shares the device profiles; the HSS
(:class:`hss_gym.hss.HSS`), the simulated backend and the C core take the object as given, so no
profile is read twice.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from hss_gym.backends.sim import DeviceProfile, load_profile

CONFIGURATIONS: dict[str, tuple[tuple[str, ...], tuple[float, ...]]] = {
    "perf_opt": (("H", "M"), (0.1,)),
    "cost_opt": (("H", "L"), (0.1,)),
    "pmem": (("PMEM", "H"), (0.1,)),
    "tri": (("H", "M", "L"), (0.1, 0.3)),
    "quad": (("H", "M", "LSSD", "L"), (0.1, 0.2, 0.3)),
}
MAX_DEVICES = 8


def _plain(x: Any) -> Any:
    """A NumPy scalar as the Python number it holds (error texts print ``1.5``, not a repr)."""
    return x.item() if hasattr(x, "item") and hasattr(x, "dtype") else x


@dataclass(frozen=True)
class HSSConfig:
    """Everything that defines an HSS apart from the workload.

    fractions:   capacity of each non-home device as a fraction of the workload footprint
    capacities:  explicit capacities in pages (overrides ``fractions``; home may be ``None``)
    queue_size:  migration queue length (Harmonia: 10)
    queue_depth: host requests in flight at most; a request issues when it has arrived and a slot
                 is free, and its latency is measured from issue (the wait is reported). ``None``
                 (default): one per stream of the trace, a closed loop as on the papers' testbed,
                 where each workload ran in its own thread issuing one request at a time (Harmonia
                 section 5), so a request issues at max(its arrival, its stream's previous
                 completion); a mix of k workloads gets k. An int fixes the window (e.g. 32, SATA
                 NCQ: closer to open-loop replay, which saturates the devices at Table 4's rates).
    preloaded:   False (default): a page's data lives on the home device until its first access; a
                 first-touch read placed on another device is served from home, then copied there
                 in the background (a fill). True: it is already wherever it is placed (no fill),
                 the ideal of Fast-Only, whose fast device holds the whole dataset from the start
    min_interval: the migration scanner skips pages placed/migrated fewer steps ago
    scan_window: placed pages the scanner examines per candidate
    noise_p, noise_sigma: seeded tail-latency noise of the simulated devices (0 = off)
    """

    name: str
    devices: tuple[DeviceProfile, ...]
    fractions: tuple[float, ...]
    capacities: tuple[int | None, ...] | None = None
    queue_size: int = 10
    queue_depth: int | None = None
    preloaded: bool = False
    min_interval: int = 16
    scan_window: int = 32
    noise_p: float = 0.0
    noise_sigma: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        n = len(self.devices)
        if not 1 <= n <= MAX_DEVICES:
            raise ValueError(f"config {self.name}: needs 1 to {MAX_DEVICES} devices, got {n}")
        if len(self.fractions) != n - 1:
            raise ValueError(f"config {self.name}: fractions needs {n - 1} values (one per "
                             f"non-home device), got {len(self.fractions)}")
        for i, f in enumerate(self.fractions):
            if isinstance(f, bool) or not (isinstance(f, (int, float)) and math.isfinite(f) and 0 < f <= 1):
                what = "fast_fraction (fractions[0])" if i == 0 else f"fractions[{i}]"
                raise ValueError(f"config {self.name}: {what} must be in (0, 1] (a fraction of the workload's "
                                 f"footprint), got {_plain(f)!r}")
        if self.capacities is not None:
            if len(self.capacities) != n:
                raise ValueError(f"config {self.name}: capacities needs {n} values, got {len(self.capacities)}")
            for i, c in enumerate(self.capacities[:-1]):
                if c is None or int(c) <= 0:
                    raise ValueError(f"config {self.name}: capacities[{i}] must be a positive page count, "
                                     f"got {_plain(c)!r}")
        for k in ("queue_size", "min_interval"):
            if int(getattr(self, k)) < 0:
                raise ValueError(f"config {self.name}: {k} must be >= 0, got {getattr(self, k)}")
        if self.queue_depth is not None and int(self.queue_depth) < 1:
            raise ValueError(f"config {self.name}: queue_depth must be >= 1 or None (one per stream), "
                             f"got {self.queue_depth}")
        if int(self.scan_window) < 1:
            raise ValueError(f"config {self.name}: scan_window must be >= 1, got {self.scan_window}")
        if not (0 <= self.noise_p <= 1) or self.noise_sigma < 0:
            raise ValueError(f"config {self.name}: noise_p must be in [0, 1] and noise_sigma >= 0")

    @property
    def n_devices(self) -> int:
        return len(self.devices)

    def page_capacities(self, footprint_pages: int) -> list[int]:
        """Capacity in pages of each device for a workload of ``footprint_pages`` pages.
        The home device's entry is its nominal capacity (it is never full)."""
        if self.capacities is not None:
            caps = [int(c) for c in self.capacities[:-1]]
        else:
            caps = [max(1, int(f * footprint_pages)) for f in self.fractions]
        home = self.capacities[-1] if self.capacities is not None else None
        return caps + [int(home) if home else max(self.devices[-1].capacity_pages, footprint_pages)]

    def total_capacity_pages(self, footprint_pages: int) -> int:
        """Pages all devices hold together for a workload of ``footprint_pages`` pages: the
        bounded devices' capacities plus the home device's nominal one. The simulated home grows
        past it (never full), but no single request larger than this total is a storage request."""
        return sum(self.page_capacities(footprint_pages)[:-1]) + self.page_capacities(0)[-1]

    def host_queue_depth(self, streams: int = 1) -> int:
        """Requests in flight at most for a trace of ``streams`` streams (see ``queue_depth``)."""
        return int(self.queue_depth) if self.queue_depth is not None else max(1, int(streams))

    def with_options(self, **kw: Any) -> "HSSConfig":
        """A copy with some fields replaced (validated again)."""
        unknown = set(kw) - set(self.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown config option(s) {sorted(unknown)}; valid: "
                             f"{sorted(set(self.__dataclass_fields__) - {'meta', 'devices', 'name'})} and fast_fraction")
        return replace(self, **kw)

    def digest(self) -> str:
        """A stable hash of everything that affects results (for provenance)."""
        d = asdict(self)
        d.pop("meta")
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]


def make_config(spec: "str | HSSConfig | list[Any] | tuple[Any, ...]" = "perf_opt", **options: Any) -> HSSConfig:
    """A configuration by name (``"perf_opt"``), a list of device names/profiles (fastest first),
    or an existing config; ``options`` override :class:`HSSConfig` fields, plus ``fast_fraction``
    as a shortcut for the first device's fraction."""
    fast_fraction = options.pop("fast_fraction", None)
    if isinstance(spec, HSSConfig):
        cfg = spec
    elif isinstance(spec, str):
        if spec not in CONFIGURATIONS:
            near = difflib.get_close_matches(spec, CONFIGURATIONS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(f"unknown configuration {spec!r}{hint}; valid: {', '.join(CONFIGURATIONS)}")
        names, fractions = CONFIGURATIONS[spec]
        cfg = HSSConfig(spec, tuple(load_profile(n) for n in names), fractions)
    else:
        profiles = tuple(load_profile(s) for s in spec)
        n = len(profiles)
        fr = tuple(min(0.9, 0.1 * (i + 1)) for i in range(n - 1))
        cfg = HSSConfig("+".join(p.id for p in profiles), profiles, fr)
    if fast_fraction is not None:
        if cfg.n_devices < 2:
            raise ValueError("fast_fraction needs at least two devices")
        options["fractions"] = (fast_fraction,) + tuple(cfg.fractions[1:])
    return cfg.with_options(**options) if options else cfg
