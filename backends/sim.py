"""The simulated backend: device profiles and the discrete-event device model.

Device profiles are JSON files (``backends/profiles/*.json`` ship H, M, L, LSSD and PMEM with their
sources; users pass their own file path, or a dict, anywhere a device name is accepted). A profile
states datasheet facts; :func:`timing_params` derives the model's parameters from them:

* ``servers`` (internal parallelism) = round(read IOPS x read latency), or ``parallelism``;
* fixed service time of a 4 KiB I/O = max(latency, servers / IOPS) minus its transfer time, so a
  saturated device delivers exactly its datasheet IOPS and an idle one its datasheet latency;
* transfers share one channel at the sequential bandwidth (1 MB/s = 1 byte/µs);
* HDD: seek(d) = min + (max - min) * sqrt(d / capacity), max chosen so the mean over random
  positions is the datasheet's average seek, plus a uniform rotational delay (0 when sequential);
* SSD garbage collection (``gc``): write service x (1 + (max_factor - 1) * x^2) with x the
  utilisation above ``threshold`` scaled to [0, 1];
* QLC SLC cache (``slc_cache``): ``fraction`` of the device's HSS capacity absorbs writes at full
  bandwidth and refills at ``refill_mbps`` in idle time; past it writes run at ``cliff_write_mbps``.

The timing itself runs in C (``backends/simdev.c``) inside the native core, so replay costs no
Python per request.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hss_gym.backends import _core

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
PAGE = 4096
_KINDS = {"ssd": 0, "hdd": 1}


@dataclass(frozen=True)
class DeviceProfile:
    """Datasheet facts of one device. Build with :func:`load_profile` or :meth:`from_dict`."""

    id: str
    name: str
    kind: str
    capacity_gb: float
    read_bandwidth_mbps: float
    write_bandwidth_mbps: float
    read_latency_us: float = 0.0
    write_latency_us: float = 0.0
    read_iops: float = 0.0
    write_iops: float = 0.0
    parallelism: int = 0
    gc: dict[str, float] | None = None
    slc_cache: dict[str, float] | None = None
    rpm: float = 0.0
    seek_min_ms: float = 0.0
    seek_avg_ms: float = 0.0
    sources: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any], origin: str = "profile") -> "DeviceProfile":
        """Validate a profile dict; errors name the origin and the field."""
        def bad(fld: str, why: str) -> ValueError:
            return ValueError(f"device profile {origin}: field {fld!r} {why}")

        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise bad(sorted(unknown)[0], f"is not a profile field (known: {', '.join(sorted(known))})")
        for req in ("id", "kind", "capacity_gb", "read_bandwidth_mbps", "write_bandwidth_mbps"):
            if req not in d:
                raise bad(req, "is missing")
        kind = d["kind"]
        if kind not in _KINDS:
            raise bad("kind", f"must be one of {sorted(_KINDS)}, got {kind!r}")
        numeric = [k for k in ("capacity_gb", "read_bandwidth_mbps", "write_bandwidth_mbps",
                               "read_latency_us", "write_latency_us", "read_iops", "write_iops",
                               "parallelism", "rpm", "seek_min_ms", "seek_avg_ms") if k in d]
        for k in numeric:
            v = d[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise bad(k, f"must be a finite number, got {v!r}")
            if v < 0:
                raise bad(k, f"must be >= 0, got {v}")
        for k in ("capacity_gb", "read_bandwidth_mbps", "write_bandwidth_mbps"):
            if d[k] <= 0:
                raise bad(k, f"must be > 0, got {d[k]}")
        if kind == "ssd":
            for k in ("read_latency_us", "write_latency_us"):
                if d.get(k, 0) <= 0:
                    raise bad(k, "must be > 0 for an ssd")
            if not d.get("parallelism") and not (d.get("read_iops", 0) > 0 and d.get("write_iops", 0) > 0):
                raise bad("read_iops", "and write_iops (or parallelism) must be > 0 for an ssd")
        else:
            for k in ("rpm", "seek_avg_ms"):
                if d.get(k, 0) <= 0:
                    raise bad(k, "must be > 0 for an hdd")
            if d.get("seek_min_ms", 0) > d["seek_avg_ms"]:
                raise bad("seek_min_ms", "must not exceed seek_avg_ms")
        gc = d.get("gc")
        if gc is not None and not (0 <= gc.get("threshold", -1) < 1 and gc.get("max_factor", 0) >= 1):
            raise bad("gc", "needs threshold in [0, 1) and max_factor >= 1")
        slc = d.get("slc_cache")
        if slc is not None and not (0 < slc.get("fraction", 0) <= 1 and slc.get("cliff_write_mbps", 0) > 0
                                    and slc.get("refill_mbps", -1) >= 0):
            raise bad("slc_cache", "needs fraction in (0, 1], cliff_write_mbps > 0 and refill_mbps >= 0")
        return cls(**{**d, "name": d.get("name", d["id"]), "sources": tuple(d.get("sources", ()))})

    @property
    def capacity_pages(self) -> int:
        return int(self.capacity_gb * 1e9) // PAGE


def builtin_profiles() -> list[str]:
    """Ids of the profiles shipped with hss-gym."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.json"))


def load_profile(spec: "str | Path | dict[str, Any] | DeviceProfile") -> DeviceProfile:
    """A profile from a built-in id (``"H"``), a JSON file path, a dict, or a profile."""
    if isinstance(spec, DeviceProfile):
        return spec
    if isinstance(spec, dict):
        return DeviceProfile.from_dict(spec, origin=repr(spec.get("id", "dict")))
    path = Path(spec)
    if not path.suffix and str(spec) in builtin_profiles():
        path = PROFILE_DIR / f"{spec}.json"
    if not path.is_file():
        raise ValueError(f"unknown device {str(spec)!r}: not a built-in profile "
                         f"({', '.join(builtin_profiles())}) nor a profile file")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"device profile {path}: invalid JSON at line {e.lineno}: {e.msg}") from e
    return DeviceProfile.from_dict(data, origin=str(path))


def timing_params(p: DeviceProfile, capacity_pages: int, noise_p: float = 0.0,
                  noise_sigma: float = 0.0) -> dict[str, float]:
    """The C model's parameters for profile ``p`` given its capacity inside the HSS."""
    rbw, wbw = p.read_bandwidth_mbps, p.write_bandwidth_mbps  # MB/s == bytes/us
    params: dict[str, float] = {
        "kind": _KINDS[p.kind], "read_bw": rbw, "write_bw": wbw,
        "capacity_pages": max(1, capacity_pages), "noise_p": noise_p, "noise_sigma": noise_sigma,
    }
    if p.kind == "hdd":
        smin, savg = p.seek_min_ms * 1e3, p.seek_avg_ms * 1e3
        params.update(servers=1, read_us=0.0, write_us=0.0, seek_min_us=smin,
                      seek_max_us=smin + (savg - smin) * 15.0 / 8.0, rotation_us=60e6 / p.rpm)
        return params
    servers = p.parallelism or int(min(64, max(1, round(p.read_iops * p.read_latency_us * 1e-6))))
    def fixed(lat: float, iops: float, bw: float) -> float:
        service = max(lat, servers / iops * 1e6) if iops > 0 else lat
        return max(0.05 * service, service - PAGE / bw)
    params.update(servers=servers, read_us=fixed(p.read_latency_us, p.read_iops, rbw),
                  write_us=fixed(p.write_latency_us, p.write_iops, wbw))
    if p.gc:
        params.update(gc_thr=p.gc["threshold"], gc_max=p.gc["max_factor"])
    if p.slc_cache:
        params.update(slc_bytes=p.slc_cache["fraction"] * capacity_pages * PAGE,
                      slc_refill_bw=p.slc_cache["refill_mbps"], cliff_bw=p.slc_cache["cliff_write_mbps"])
    return params


class SimBackend:
    """The default backend: simulated devices, deterministic for a seed.

    ``capacities`` are the devices' capacities in pages inside the HSS (utilisation for GC, seek
    span for HDDs, SLC cache size). ``noise_p``/``noise_sigma`` add seeded tail latency."""

    name = "sim"

    def __init__(self, profiles: list[DeviceProfile], capacities: list[int], seed: int = 0,
                 noise_p: float = 0.0, noise_sigma: float = 0.0) -> None:
        if len(profiles) != len(capacities):
            raise ValueError(f"{len(profiles)} profiles but {len(capacities)} capacities")
        self.profiles = list(profiles)
        self.devices = _core.SimDevices(
            [timing_params(p, c, noise_p, noise_sigma) for p, c in zip(profiles, capacities)], seed)

    @property
    def n_devices(self) -> int:
        return self.devices.n

    def io(self, device: int, op: int, slot: int, npages: int, t: float,
           background: bool = False) -> float:
        return self.devices.io(device, op, slot, npages, t, background)

    def free_at(self, device: int) -> float:
        return self.devices.free_at(device)

    def reset(self, seed: int = 0) -> None:
        self.devices.reset(seed)

    def stats(self) -> list[dict[str, Any]]:
        return [{"device": p.id, **s} for p, s in zip(self.profiles, self.devices.stats())]
