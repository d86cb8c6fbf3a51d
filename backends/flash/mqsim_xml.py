"""Load an MQSim ``ssdconfig.xml`` (Execution_Parameter_Set) as a :class:`FlashProfile`.

MQSim's device file is the de-facto exchange format of SSD researchers. The fields the flash model
uses are read (times in ns in the file, us in the profile); the other MQSim fields (host interface,
CMT, wear levelling...) are accepted and ignored, since the model does not simulate them
(docs/flash-model.md). A missing used field, an unknown field or a value that is not a number is an
error naming the file, the line and the field.

Program/erase suspension (``CMD_Suspension_Support``, ``Suspend_*_Time``, ``Preferred_suspend_*``)
is read as MQSim reads it: optional, with MQSim's defaults when absent. MQSim's parser looks for
``Prefered_suspend_erase_time_for_read`` (one r; Device_Parameter_Set.cpp), so the correctly spelled
``Preferred_suspend_erase_time_for_read`` of its own ssdconfig.xml has no effect there (the 700 us
default holds); it is accepted and, like in MQSim, ignored.

The DRAM data cache (``Caching_Mechanism``, ``Data_Cache_Sharing_Mode``, ``Data_Cache_Capacity``,
``Data_Cache_DRAM_*``) is read the same way, with MQSim's own defaults (Device_Parameter_Set.cpp:
512 MiB, 800 MT/s, 4-byte bursts; its shipped ssdconfig.xml says 256 MiB, 100 MT/s, 1 byte) when a
field is absent. Whether the cache is used is MQSim's per-flow workload setting, not in the file:
``load_ssdconfig(path, caching_mode="WRITE_CACHE")``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from hss_gym.backends.flash.profile import FlashProfile, FlashProfileError

# field in the XML -> (profile field, converter)
USED = {
    "Flash_Channel_Count": ("n_channels", int),
    "Chip_No_Per_Channel": ("chips_per_channel", int),
    "Die_No_Per_Chip": ("dies_per_chip", int),
    "Plane_No_Per_Die": ("planes_per_die", int),
    "Block_No_Per_Plane": ("blocks_per_plane", int),
    "Page_No_Per_Block": ("pages_per_block", int),
    "Page_Capacity": ("page_size", int),
    "Overprovisioning_Ratio": ("op_ratio", float),
    "GC_Exec_Threshold": ("gc_threshold", float),
    "Page_Read_Latency_LSB": ("read_us", lambda v: float(v) / 1000.0),
    "Page_Program_Latency_LSB": ("program_us", lambda v: float(v) / 1000.0),
    "Block_Erase_Latency": ("erase_us", lambda v: float(v) / 1000.0),
    "Channel_Transfer_Rate": ("channel_mtps", float),
    "Flash_Channel_Width": ("channel_width_bytes", int),
}

_SUSP = {"NONE": "none", "PROGRAM": "program", "ERASE": "erase", "PROGRAM_ERASE": "program_erase"}


_CACHE_SHARING = {"SHARED": "shared", "EQUAL_PARTITIONING": "equal"}
_CACHE_MECHANISM = {"ADVANCED": "advanced", "SIMPLE": "simple"}
# MQSim's Device_Level_Data_Caching_Mode (a workload-file field) -> profile cache_mode
CACHING_MODES = {"TURNED_OFF": "off", "WRITE_CACHE": "write", "READ_CACHE": "read", "WRITE_READ_CACHE": "write_read"}


def _choice(table: dict[str, str]):
    def conv(v: str) -> str:
        out = table.get(v.strip().upper())
        if out is None:
            raise ValueError(f"must be one of {sorted(table)}")
        return out
    return conv


def _suspension(v: str) -> str:
    mode = _SUSP.get(v.strip().upper())
    if mode is None:
        raise ValueError(f"must be one of {sorted(_SUSP)}")
    return mode


# Optional fields (MQSim has defaults for them): field -> (profile field, converter).
OPTIONAL = {
    "CMD_Suspension_Support": ("suspension", _suspension),
    "Suspend_Program_Time": ("suspend_program_us", lambda v: float(v) / 1000.0),
    "Suspend_Erase_Time": ("suspend_erase_us", lambda v: float(v) / 1000.0),
    "Preferred_suspend_write_time_for_read": ("suspend_program_for_read_min_us", lambda v: float(v) / 1000.0),
    "Prefered_suspend_erase_time_for_read": ("suspend_erase_for_read_min_us", lambda v: float(v) / 1000.0),
    "Preferred_suspend_erase_time_for_write": ("suspend_erase_for_write_min_us", lambda v: float(v) / 1000.0),
    "Caching_Mechanism": ("cache_mechanism", _choice(_CACHE_MECHANISM)),
    "Data_Cache_Sharing_Mode": ("cache_sharing", _choice(_CACHE_SHARING)),
    "Data_Cache_Capacity": ("cache_capacity_bytes", int),
    "Data_Cache_DRAM_Row_Size": ("cache_dram_row_bytes", int),
    "Data_Cache_DRAM_Data_Rate": ("cache_dram_mtps", float),
    "Data_Cache_DRAM_Data_Busrt_Size": ("cache_dram_burst_bytes", int),
    "Data_Cache_DRAM_tRCD": ("cache_dram_trcd_ns", float),
    "Data_Cache_DRAM_tCL": ("cache_dram_tcl_ns", float),
    "Data_Cache_DRAM_tRP": ("cache_dram_trp_ns", float),
}
_CHOICES = {"CMD_Suspension_Support", "Caching_Mechanism", "Data_Cache_Sharing_Mode"}
# MQSim's values of the cache fields when the file has none (Device_Parameter_Set.cpp)
MQSIM_CACHE_DEFAULTS = {"cache_capacity_bytes": 512 * 2**20, "cache_dram_row_bytes": 8192, "cache_dram_mtps": 800.0,
                        "cache_dram_burst_bytes": 4, "cache_dram_trcd_ns": 13.0, "cache_dram_tcl_ns": 13.0,
                        "cache_dram_trp_ns": 13.0}

# MQSim fields the model does not simulate (accepted, ignored).
IGNORED = {
    "PCIe_Lane_Bandwidth", "PCIe_Lane_Count", "SATA_Processing_Delay", "Enable_ResponseTime_Logging",
    "ResponseTime_Logging_Period_Length", "Seed", "Enabled_Preconditioning", "Memory_Type",
    "HostInterface_Type", "IO_Queue_Depth", "Queue_Fetch_Size", "Address_Mapping", "Ideal_Mapping_Table",
    "CMT_Capacity", "CMT_Sharing_Mode", "Plane_Allocation_Scheme", "Transaction_Scheduling_Policy",
    "GC_Block_Selection_Policy", "Use_Copyback_for_GC", "Preemptible_GC_Enabled", "GC_Hard_Threshold",
    "Dynamic_Wearleveling_Enabled", "Static_Wearleveling_Enabled", "Static_Wearleveling_Threshold",
    "Preferred_suspend_erase_time_for_read",  # MQSim reads "Prefered_..." (see the module docstring)
    "Flash_Comm_Protocol", "Flash_Technology", "Page_Read_Latency_CSB", "Page_Read_Latency_MSB",
    "Page_Program_Latency_CSB", "Page_Program_Latency_MSB", "Block_PE_Cycles_Limit", "Page_Metadat_Capacity",
}
CONTAINERS = {"Execution_Parameter_Set", "Host_Parameter_Set", "Device_Parameter_Set", "Flash_Parameter_Set"}


def _line_of(text: str, tag: str) -> int | None:
    m = re.search(rf"<{re.escape(tag)}[\s>/]", text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def load_ssdconfig(path: "str | Path", caching_mode: str = "TURNED_OFF") -> FlashProfile:
    """Parse an MQSim ssdconfig.xml into a FlashProfile named after the file.

    The file sizes and times the DRAM data cache, but whether it is used is a per-flow setting of
    MQSim's workload file (``Device_Level_Data_Caching_Mode``): give it as ``caching_mode``
    (TURNED_OFF, the default, WRITE_CACHE, READ_CACHE or WRITE_READ_CACHE) for all streams."""
    path = Path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise FlashProfileError(f"{path}: line {e.position[0]}: not well-formed XML: {e}") from None
    if root.tag != "Execution_Parameter_Set":
        raise FlashProfileError(f"{path}: line 1: root element is <{root.tag}>, expected <Execution_Parameter_Set> "
                                "(an MQSim ssdconfig.xml)")
    values: dict[str, object] = {}
    for el in root.iter():
        tag = el.tag
        if tag in CONTAINERS or tag in IGNORED:
            continue
        line = _line_of(text, tag)
        if tag not in USED and tag not in OPTIONAL:
            raise FlashProfileError(f"{path}: line {line}: unknown field <{tag}> (not an MQSim ssdconfig field)")
        field, conv = USED[tag] if tag in USED else OPTIONAL[tag]
        raw = (el.text or "").strip()
        try:
            values[field] = conv(raw)
        except ValueError as e:
            what = str(e) if tag in _CHOICES else "must be a number"
            raise FlashProfileError(f"{path}: line {line}: field <{tag}> {what} (got {raw!r})") from None
    mode = CACHING_MODES.get(str(caching_mode).strip().upper())
    if mode is None:
        raise FlashProfileError(f"{path}: caching_mode must be one of {sorted(CACHING_MODES)} (got {caching_mode!r})")
    values["cache_mode"] = mode
    for field, v in MQSIM_CACHE_DEFAULTS.items():
        values.setdefault(field, v)
    missing = [tag for tag, (field, _) in USED.items() if field not in values]
    if missing:
        raise FlashProfileError(f"{path}: missing field(s) {missing}")
    return FlashProfile(name=path.stem, source=f"MQSim ssdconfig {path}", **values)  # type: ignore[arg-type]
