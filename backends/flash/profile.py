"""Flash SSD profiles (SPEC section 10): geometry and timing as data files, like the HSS device
profiles. ``load_profile`` (:mod:`.loader`) takes a built-in name (``mqsim-default``, ``rlalloc``, ``fleetio``), a
``.json`` path, or an MQSim ``ssdconfig.xml`` path (the exchange format of SSD researchers), and an
optional ``scale`` that shrinks blocks per plane only, so that parallelism and timing stay those of
the full device while memory and preconditioning shrink (for RL training).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
BUILTIN = ("mqsim-default", "rlalloc", "fleetio", "fleetio-v0")
# A scaled plane keeps at least this many blocks: each stream holds an open data block and a GC
# block per plane, and GC needs full blocks to choose from (with 8 streams and 16-32 blocks per
# plane, GC storms dominate; with 64 blocks, GC behaves normally: measured in docs/flash-model.md).
MIN_BLOCKS = 64
# MQSim's CMD_Suspension_Support values: which array operations a read (or, for erases, a program)
# may suspend.
SUSPENSION_MODES = ("none", "program", "erase", "program_erase")
# The DRAM data cache: what it caches (MQSim's Device_Level_Data_Caching_Mode, per flow in MQSim's
# workload file: TURNED_OFF, WRITE_CACHE, READ_CACHE, WRITE_READ_CACHE), how streams share it
# (Data_Cache_Sharing_Mode SHARED, EQUAL_PARTITIONING) and MQSim's Caching_Mechanism.
CACHE_MODES = ("off", "write", "read", "write_read")
CACHE_SHARING = ("shared", "equal")
CACHE_MECHANISMS = ("advanced", "simple")


class FlashProfileError(ValueError):
    """A profile (JSON or ssdconfig.xml) is invalid. The message names the file and the field."""


@dataclass(frozen=True)
class FlashProfile:
    """One SSD: geometry, over-provisioning, GC threshold and timing (see the profiles/*.json)."""

    name: str
    n_channels: int
    chips_per_channel: int
    dies_per_chip: int
    planes_per_die: int
    blocks_per_plane: int
    pages_per_block: int
    page_size: int            # bytes
    op_ratio: float           # over-provisioning: logical = physical * (1 - op_ratio)
    gc_threshold: float       # GC when a plane's free blocks < gc_threshold * blocks_per_plane
    read_us: float
    program_us: float
    erase_us: float
    channel_mtps: float       # channel bus mega-transfers per second
    channel_width_bytes: int  # bytes per transfer
    source: str = ""
    scale: float = 1.0        # blocks_per_plane relative to the profile file's
    # Program/erase suspension (MQSim's CMD_Suspension_Support; off by default). A read may suspend
    # a running program ("program") or erase ("erase"), or both; with erases, a program may suspend
    # an erase too. Suspending costs suspend_*_us (MQSim's Suspend_Program_Time / Suspend_Erase_Time,
    # on the channel before the new command); an operation is suspended only when at least
    # suspend_*_min_us of it is left (MQSim's Preferred_suspend_write_time_for_read,
    # Preferred_suspend_erase_time_for_read / _for_write), and a chip holds one suspended command.
    suspension: str = "none"
    suspend_program_us: float = 100.0
    suspend_erase_us: float = 700.0
    suspend_program_for_read_min_us: float = 100.0
    suspend_erase_for_read_min_us: float = 700.0
    suspend_erase_for_write_min_us: float = 700.0
    # DRAM data cache (off by default; MQSim's Data_Cache_Manager_Flash_Advanced, see
    # docs/flash-model.md): "write" absorbs writes in DRAM (write-back: a page's first write in a
    # second is written back at once, a rewritten page stays dirty until evicted, writes wait while
    # one page per plane of write-backs is in flight), "read" keeps pages read from flash, and reads
    # are served from DRAM for whatever the cache holds. "shared": one cache for all streams;
    # "equal": each stream cache_capacity_bytes / n_streams. The DRAM (one channel) is MQSim's
    # Data_Cache_DRAM_* (defaults: its ssdconfig.xml's 256 MiB, 8 KiB rows, 100 MT/s, 1-byte bursts,
    # tRCD = tCL = tRP = 13 ns). Only the "advanced" mechanism is modelled ("simple" is refused
    # with the cache on).
    cache_mode: str = "off"
    cache_sharing: str = "shared"
    cache_mechanism: str = "advanced"
    cache_capacity_bytes: int = 256 * 2**20
    cache_dram_row_bytes: int = 8192
    cache_dram_mtps: float = 100.0
    cache_dram_burst_bytes: int = 1
    cache_dram_trcd_ns: float = 13.0
    cache_dram_tcl_ns: float = 13.0
    cache_dram_trp_ns: float = 13.0

    def __post_init__(self) -> None:
        where = self.source or self.name
        ints = ("n_channels", "chips_per_channel", "dies_per_chip", "planes_per_die", "blocks_per_plane",
                "pages_per_block", "page_size", "channel_width_bytes")
        for f in ints:
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise FlashProfileError(f"{where}: field {f!r} must be a positive integer (got {v!r})")
        for f in ("read_us", "program_us", "erase_us", "channel_mtps"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise FlashProfileError(f"{where}: field {f!r} must be a positive number (got {v!r})")
        if self.suspension not in SUSPENSION_MODES:
            raise FlashProfileError(f"{where}: field 'suspension' must be one of {list(SUSPENSION_MODES)} "
                                    f"(got {self.suspension!r})")
        for f in ("suspend_program_us", "suspend_erase_us", "suspend_program_for_read_min_us",
                  "suspend_erase_for_read_min_us", "suspend_erase_for_write_min_us"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0 or v == float("inf"):
                raise FlashProfileError(f"{where}: field {f!r} must be a finite number >= 0 (got {v!r})")
        for f, allowed in (("cache_mode", CACHE_MODES), ("cache_sharing", CACHE_SHARING),
                           ("cache_mechanism", CACHE_MECHANISMS)):
            if getattr(self, f) not in allowed:
                raise FlashProfileError(f"{where}: field {f!r} must be one of {list(allowed)} (got {getattr(self, f)!r})")
        for f in ("cache_capacity_bytes", "cache_dram_row_bytes", "cache_dram_burst_bytes"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise FlashProfileError(f"{where}: field {f!r} must be a positive integer (got {v!r})")
        v = self.cache_dram_mtps
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < float("inf"):
            raise FlashProfileError(f"{where}: field 'cache_dram_mtps' must be a positive number (got {v!r})")
        for f in ("cache_dram_trcd_ns", "cache_dram_tcl_ns", "cache_dram_trp_ns"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf"):
                raise FlashProfileError(f"{where}: field {f!r} must be a finite number >= 0 (got {v!r})")
        if self.cache_mode != "off":
            if self.cache_mechanism != "advanced":
                raise FlashProfileError(f"{where}: cache_mechanism {self.cache_mechanism!r} is not modelled "
                                        "(MQSim's Data_Cache_Manager_Flash_Advanced is: 'advanced')")
            if self.page_size > 32768:
                raise FlashProfileError(f"{where}: the data cache needs page_size <= 32768 bytes (got {self.page_size})")
            if self.cache_capacity_bytes < self.page_size:
                raise FlashProfileError(f"{where}: field 'cache_capacity_bytes' must hold at least one page "
                                        f"({self.page_size} bytes; got {self.cache_capacity_bytes})")
        if not 0 < self.op_ratio < 0.9:
            raise FlashProfileError(f"{where}: field 'op_ratio' must be in (0, 0.9) (got {self.op_ratio!r})")
        if not 0 < self.gc_threshold < 0.5:
            raise FlashProfileError(f"{where}: field 'gc_threshold' must be in (0, 0.5) (got {self.gc_threshold!r})")
        if self.planes_per_die > 8:
            raise FlashProfileError(f"{where}: field 'planes_per_die' must be <= 8 (got {self.planes_per_die})")
        if self.page_size % 512:
            raise FlashProfileError(f"{where}: field 'page_size' must be a multiple of 512 bytes "
                                    f"(got {self.page_size})")
        if self.n_units > 1024:
            raise FlashProfileError(f"{where}: n_channels * chips_per_channel must be <= 1024 (got {self.n_units})")
        if self.physical_pages >= 2**32 - 1:
            raise FlashProfileError(f"{where}: {self.physical_pages} physical pages; the model addresses < 2^32 "
                                    "(use a larger page_size or a scale < 1)")
        if int(self.gc_threshold * self.blocks_per_plane) + 2 >= self.blocks_per_plane:
            raise FlashProfileError(f"{where}: blocks_per_plane={self.blocks_per_plane} leaves no room for data "
                                    f"above the GC threshold {self.gc_threshold}")

    # derived ---------------------------------------------------------------------------------
    @property
    def cache_pages(self) -> int:
        """Pages the data cache holds (0 when off): MQSim's capacity / page size."""
        return 0 if self.cache_mode == "off" else self.cache_capacity_bytes // self.page_size

    @property
    def program_suspension(self) -> bool:
        """A read may suspend a running program."""
        return self.suspension in ("program", "program_erase")

    @property
    def erase_suspension(self) -> bool:
        """A read or a program may suspend a running erase."""
        return self.suspension in ("erase", "program_erase")

    @property
    def n_units(self) -> int:
        """(channel, chip) units; unit u = channel * chips_per_channel + chip."""
        return self.n_channels * self.chips_per_channel

    @property
    def physical_pages(self) -> int:
        return (self.n_units * self.dies_per_chip * self.planes_per_die * self.blocks_per_plane
                * self.pages_per_block)

    @property
    def logical_pages(self) -> int:
        """User-visible pages: physical * (1 - op_ratio)."""
        return int(self.physical_pages * (1.0 - self.op_ratio))

    @property
    def logical_bytes(self) -> int:
        return self.logical_pages * self.page_size

    @property
    def channel_bandwidth_Bps(self) -> float:
        """Data-transfer bandwidth of one channel bus (bytes/s)."""
        return self.channel_mtps * 1e6 * self.channel_width_bytes

    @property
    def unit_write_Bps(self) -> float:
        """Peak program bandwidth of one chip, bytes/s: a multi-plane program of every plane of a die
        per program time plus its data transfer. MQSim's chips run one command at a time, so dies do
        not add to it; multi-plane needs writes at the same page offset on each plane, so random
        writes get less (down to page_size per program time)."""
        per_cmd = self.planes_per_die * self.page_size
        xfer = per_cmd / self.channel_bandwidth_Bps
        return per_cmd / (self.program_us * 1e-6 + xfer)

    def digest(self) -> str:
        """A hash of everything that shapes the simulation (all fields but the ``source`` note):
        results record it, and ``hss-gym validate`` refuses a run made with another device."""
        fields = {k: v for k, v in dataclasses.asdict(self).items() if k != "source"}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]

    def scaled(self, f: float) -> "FlashProfile":
        """The same device with blocks_per_plane multiplied by f (0 < f <= 1; at least MIN_BLOCKS
        = 64 blocks, or the profile's own count if smaller), parallelism and timing kept."""
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1:
            raise FlashProfileError(f"{self.name}: scale must be in (0, 1] (got {f!r})")
        blocks = max(min(MIN_BLOCKS, self.blocks_per_plane), int(round(self.blocks_per_plane * f)))
        return dataclasses.replace(self, blocks_per_plane=blocks, scale=self.scale * f)


_FIELDS = {f.name for f in dataclasses.fields(FlashProfile)}
_REQUIRED = {f.name for f in dataclasses.fields(FlashProfile)
             if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}


def profile_from_dict(d: dict[str, Any], where: str) -> FlashProfile:
    """A profile from a mapping; unknown or missing fields are errors naming ``where``."""
    if not isinstance(d, dict):
        raise FlashProfileError(f"{where}: a profile must be a JSON object")
    unknown = sorted(set(d) - _FIELDS)
    if unknown:
        raise FlashProfileError(f"{where}: unknown field(s) {unknown}; known: {sorted(_FIELDS)}")
    missing = sorted(_REQUIRED - set(d))
    if missing:
        raise FlashProfileError(f"{where}: missing field(s) {missing}")
    d = dict(d)
    d.setdefault("source", where)
    return FlashProfile(**d)

