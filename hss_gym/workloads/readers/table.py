"""The format table: every trace format hss-gym reads, by name, with its description, its
options and the parser that reads it (:func:`make_parser`).

The delimited formats are declared here as :class:`~hss_gym.workloads.readers.delimited.DelimitedFormat`
values (columns, units, op tokens and a plausibility check of the units that auto-detection
uses), as is the generic ``csv`` layout built from a column map (:func:`csv_format`);
``blkparse`` and ``fio`` have parsers of their own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from hss_gym.workloads.readers.blkparse import BlkparseParser
from hss_gym.workloads.readers.delimited import Column, DelimitedFormat, DelimitedParser
from hss_gym.workloads.readers.fio import FioParser
from hss_gym.workloads.readers.protocol import DROP, SECTOR, TIME_UNITS, Block, Parser
from hss_gym.workloads.trace import READ, WRITE, TraceFormatError


def _byte_sizes(block: Block) -> bool:
    """Sizes in bytes of a block device: all multiples of 512 (offsets may be unaligned)."""
    return bool((block.size % SECTOR == 0).all())


def _sector_counts(block: Block) -> bool:
    """Sizes in 512-byte sectors (MQSim): not all multiples of 512 sectors (256 KiB), and the
    nanosecond times are integers."""
    ns = block.time_us * 1000
    return bool((block.size % (SECTOR * SECTOR) != 0).any() and
                (np.abs(ns - np.round(ns)) <= 1e-6 * np.maximum(1.0, ns)).all())


def _disksim_values(block: Block) -> bool:
    """DiskSim's units: sizes in 512-byte blocks (not all multiples of 512 blocks: those are
    byte counts, Heimdall's), and times in milliseconds: some with a fraction of a millisecond,
    or, all integer, less than a second apart on average (MQSim's integer nanoseconds read as
    milliseconds put requests minutes apart)."""
    if not (block.size % (SECTOR * SECTOR) != 0).any():
        return False
    us = block.time_us
    if (us % 1000 != 0).any():
        return True
    return bool(len(us) > 1 and (us.max() - us.min()) / (len(us) - 1) < 1e6)


#: what each format's plausibility check asks of its values, for detect's errors
PLAUSIBLE = {"heimdall": "heimdall sizes are bytes, multiples of 512",
              "mqsim": "mqsim times are integer nanoseconds and sizes are 512-byte sector counts, "
                       "not all multiples of 512",
              "disksim": "disksim sizes are 512-byte block counts, not all multiples of 512, "
                         "and times milliseconds (with a fraction, or < 1 s apart on average)"}


_HEX_OPS = {f"{prefix}{code}": op for code, op in (
    ("08", READ), ("28", READ), ("a8", READ), ("88", READ),
    ("0a", WRITE), ("2a", WRITE), ("aa", WRITE), ("8a", WRITE)) for prefix in ("", "0x")}

MSR = DelimitedFormat(
    name="msr",
    summary="MSR Cambridge CSV: Timestamp (Windows filetime, 100 ns ticks; read relative to the "
            "first request, exactly), Hostname, DiskNumber, Type (Read/Write), Offset (bytes), "
            "Size (bytes), ResponseTime (100 ns ticks)",
    columns=("Timestamp", "Hostname", "DiskNumber", "Type", "Offset", "Size", "ResponseTime"),
    delimiter=b",", time=Column(0, "Timestamp", -1), op=Column(3, "Type"),
    offset=Column(4, "Offset"), size=Column(5, "Size"), ops={"Read": READ, "Write": WRITE},
    relative_time=True)

SYSTOR17 = DelimitedFormat(
    name="systor17",
    summary="SNIA SYSTOR'17 CSV: Timestamp (Unix seconds with fraction), Response (s), IOType "
            "(R/W; blank = no data transfer, dropped), LUN, Offset (bytes), Size (bytes); "
            "optional header line",
    columns=("Timestamp", "Response", "IOType", "LUN", "Offset", "Size"),
    delimiter=b",", time=Column(0, "Timestamp", 6), op=Column(2, "IOType"),
    offset=Column(4, "Offset"), size=Column(5, "Size"),
    ops={"R": READ, "W": WRITE, "": DROP}, drop_reason="blank IOType")

ALIBABA = DelimitedFormat(
    name="alibaba",
    summary="Alibaba block traces 2020 CSV: device_id, opcode (R/W), offset (bytes), length "
            "(bytes), timestamp (microseconds)",
    columns=("device_id", "opcode", "offset", "length", "timestamp"),
    delimiter=b",", time=Column(4, "timestamp", 0), op=Column(1, "opcode"),
    offset=Column(2, "offset"), size=Column(3, "length"), ops={"R": READ, "W": WRITE})

TENCENT = DelimitedFormat(
    name="tencent",
    summary="Tencent CBS CSV: Timestamp (Unix seconds), Offset (512-byte sectors), Size "
            "(512-byte sectors), IOType (0 = read, 1 = write), VolumeID",
    columns=("Timestamp", "Offset", "Size", "IOType", "VolumeID"),
    delimiter=b",", time=Column(0, "Timestamp", 6), op=Column(3, "IOType"),
    offset=Column(1, "Offset", SECTOR), size=Column(2, "Size", SECTOR),
    ops={"0": READ, "1": WRITE}, fold_case=False)

FIU = DelimitedFormat(
    name="fiu",
    summary="FIU SRCMap / IODedup traces, space separated: ts (ns), pid, process, lba (512-byte "
            "sectors), size (512-byte sectors), op (R/W), major, minor, md5 (optional)",
    columns=("ts", "pid", "process", "lba", "size", "op", "major", "minor", "md5"),
    delimiter=None, time=Column(0, "ts", -3), op=Column(5, "op"),
    offset=Column(3, "lba", SECTOR), size=Column(4, "size", SECTOR),
    ops={"R": READ, "W": WRITE}, max_fields=9)

MQSIM = DelimitedFormat(
    name="mqsim",
    summary="MQSim ASCII trace, space separated: arrival_time (integer ns), device_id, "
            "start_sector (512-byte sectors), size (512-byte sectors), type (0 = write, 1 = read)",
    columns=("arrival_time", "device_id", "start_sector", "size", "type"),
    delimiter=None, time=Column(0, "arrival_time", -3), op=Column(4, "type"),
    offset=Column(2, "start_sector", SECTOR), size=Column(3, "size", SECTOR),
    ops={"1": READ, "0": WRITE}, fold_case=False, extensions=(".trace",),
    plausible=_sector_counts)

DISKSIM = DelimitedFormat(
    name="disksim",
    summary="DiskSim ASCII trace (DiskSim, SSDsim, FlashSim sample traces), space separated: "
            "arrival_time (ms, with fraction), device, block_number (512-byte blocks), size "
            "(512-byte blocks), flags (integer bitmask, bit 0 set = read)",
    columns=("arrival_time", "device", "block_number", "size", "flags"),
    delimiter=None, time=Column(0, "arrival_time", 3), op=Column(4, "flags"),
    offset=Column(2, "block_number", SECTOR), size=Column(3, "size", SECTOR),
    ops={str(flags): READ if flags & 1 else WRITE for flags in range(127)}, fold_case=False,
    extensions=(".trace", ".disksim"), plausible=_disksim_values,
    op_help="a flags bitmask, a decimal integer 0-126 (bit 0 set = read)")

SPC = DelimitedFormat(
    name="spc",
    summary="SPC / UMass trace repository CSV: ASU, LBA (512-byte blocks), Size (bytes), Opcode "
            "(r/w), Timestamp (seconds); further optional fields are ignored",
    columns=("ASU", "LBA", "Size", "Opcode", "Timestamp"),
    delimiter=b",", time=Column(4, "Timestamp", 6), op=Column(3, "Opcode"),
    offset=Column(1, "LBA", SECTOR), size=Column(2, "Size"),
    ops={"r": READ, "w": WRITE}, max_fields=64, extensions=(".spc",))

CLOUDPHYSICS = DelimitedFormat(
    name="cloudphysics",
    summary="CloudPhysics / libCacheSim CSV with header version,time,op,size,lbn: time "
            "(seconds), op (SCSI opcode in hex: 08/28/88/a8 read, 0a/2a/8a/aa write), size "
            "(bytes), lbn (512-byte blocks)",
    columns=("version", "time", "op", "size", "lbn"),
    delimiter=b",", time=Column(1, "time", 6), op=Column(2, "op"),
    offset=Column(4, "lbn", SECTOR), size=Column(3, "size"),
    ops=_HEX_OPS, detect_needs_header=True)

HEIMDALL = DelimitedFormat(
    name="heimdall",
    summary="Heimdall replayer trace (MSR excerpts), space separated: timestamp (ms), device, "
            "offset (bytes), size (bytes), op (1 = read, 0 = write)",
    columns=("timestamp", "device", "offset", "size", "op"),
    delimiter=None, time=Column(0, "timestamp", 3), op=Column(4, "op"),
    offset=Column(2, "offset"), size=Column(3, "size"),
    ops={"1": READ, "0": WRITE}, fold_case=False, extensions=(".trace",),
    plausible=_byte_sizes)

DELIMITED: dict[str, DelimitedFormat] = {f.name: f for f in (
    MSR, SYSTOR17, ALIBABA, TENCENT, FIU, MQSIM, DISKSIM, SPC, CLOUDPHYSICS, HEIMDALL)}


#: units a csv header name may end in (after ``_``, ``-``, a space or in brackets: ``time_us``,
#: ``Size (bytes)``, ``offset[sectors]``), for the time column and for the offset and size columns
NAMED_TIME_UNITS: dict[str, str] = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), "s"),
    **dict.fromkeys(("ms", "msec", "millisecond", "milliseconds"), "ms"),
    **dict.fromkeys(("us", "µs", "usec", "microsecond", "microseconds"), "us"),
    **dict.fromkeys(("ns", "nsec", "nanosecond", "nanoseconds"), "ns")}
NAMED_BYTE_UNITS: dict[str, int] = {**dict.fromkeys(("b", "byte", "bytes"), 1),
                                    **dict.fromkeys(("sector", "sectors"), SECTOR)}


def unit_in_name(name: str, units: Mapping[str, Any]) -> Any:
    """The unit a column name states by its last word (``"time_us"`` -> ``"us"``, ``"Size
    (bytes)"`` -> 1), or None: a name like ``"ts"`` or ``"lba"`` states none."""
    words = re.findall(r"[^\W_]+", name.lower())
    return units.get(words[-1]) if words else None


def csv_format(columns: Mapping[str, int | str], *, delimiter: str | None = ",",
               header: bool | None = None, time_unit: str | None = None,
               offset_unit: int | None = None, size_unit: int | None = None,
               read_values: Iterable[str] = ("r", "read"),
               write_values: Iterable[str] = ("w", "write"), drop_values: Iterable[str] = (),
               case_sensitive: bool = False,
               header_names: Sequence[str] | None = None) -> DelimitedFormat:
    """The generic ``csv`` format from a column map; the options of ``load_trace(p, "csv")``.

    Example: ``load_trace(p, "csv", columns={"time": 0, "op": 2, "offset": 3, "size": 4},
    time_unit="s", offset_unit=512, read_values=("R", "0"), write_values=("W", "1"))``.

    ``columns`` maps ``time``, ``op``, ``offset`` and ``size`` to a 0-based field index, or to a
    column name looked up in the header line (``header_names``, read from the file by the
    reader). Other fields are ignored. ``delimiter`` is one character, or None for runs of white
    space. ``header``: None skips a first line whose time, offset and size fields start with a
    letter, True always skips the first line, False never (names in ``columns`` imply True).
    ``time_unit`` is one of :data:`TIME_UNITS` (times may have a fraction); ``offset_unit`` /
    ``size_unit`` are bytes per unit (512 for sectors). Units are never guessed: each must be
    given, or be the last word of its column's header name (``time_us``, ``size_bytes``,
    ``offset (sectors)``: :data:`NAMED_TIME_UNITS`, :data:`NAMED_BYTE_UNITS`); one given that
    contradicts the name is an error too. Op tokens (at most 8 bytes; compared
    case-insensitively unless ``case_sensitive``) in ``read_values`` / ``write_values`` become
    reads / writes, those in ``drop_values`` are dropped (counted in ``source["dropped"]``),
    anything else is an error.
    """
    need = {"time", "op", "offset", "size"}
    for option, values in (("read_values", read_values), ("write_values", write_values),
                           ("drop_values", drop_values)):
        if isinstance(values, (str, bytes)) or not all(isinstance(v, str) for v in values):
            raise ValueError(f"{option} must be a list of strings (op values), got {values!r}")
    for option, flag in (("case_sensitive", case_sensitive), ("header", header)):
        if not isinstance(flag, bool) and not (option == "header" and flag is None):
            raise ValueError(f"{option} must be true or false, got {flag!r}")
    if set(columns) != need:
        raise ValueError(f"columns must map exactly {sorted(need)}, got {sorted(columns)}")
    if time_unit is not None and time_unit not in TIME_UNITS:
        raise ValueError(f"time_unit must be one of {list(TIME_UNITS)}, got {time_unit!r}")
    if delimiter is not None and (len(delimiter.encode()) != 1 or delimiter in "\r\n"):
        raise ValueError(f"delimiter must be one byte other than CR/LF, got {delimiter!r}")
    for unit_name, unit in (("offset_unit", offset_unit), ("size_unit", size_unit)):
        if unit is not None and (not isinstance(unit, int) or isinstance(unit, bool) or unit < 1):
            raise ValueError(f"{unit_name} must be a positive integer (bytes), got {unit!r}")
    index: dict[str, int] = {}
    for role, col in columns.items():
        if isinstance(col, str):
            names = [n.strip().lower() for n in header_names or ()]
            if col.strip().lower() not in names:
                raise ValueError(f"column {col!r} is not in the header {list(header_names or ())}")
            index[role] = names.index(col.strip().lower())
        elif isinstance(col, int) and not isinstance(col, bool) and 0 <= col < 64:
            index[role] = col
        else:
            raise ValueError(f"column for {role!r} must be an index in [0, 64) or a name, "
                             f"got {col!r}")
    ops: dict[str, int] = {}
    for values, code in ((read_values, READ), (write_values, WRITE), (drop_values, DROP)):
        for value in values:
            key = value if case_sensitive else value.lower()
            if ops.get(key, code) != code:
                raise ValueError(f"op value {value!r} is given for two different ops")
            ops[key] = code
    time_unit = _stated_unit("time", "time_unit", time_unit, columns, index, header_names,
                             NAMED_TIME_UNITS, "one of " + ", ".join(TIME_UNITS))
    offset_unit = _stated_unit("offset", "offset_unit", offset_unit, columns, index, header_names,
                               NAMED_BYTE_UNITS, "bytes per unit: 1 for bytes, 512 for sectors")
    size_unit = _stated_unit("size", "size_unit", size_unit, columns, index, header_names,
                             NAMED_BYTE_UNITS, "bytes per unit: 1 for bytes, 512 for sectors")
    width = max(index.values()) + 1
    names = tuple(header_names or ()) if header_names and len(header_names) >= width else ()
    names = names or tuple(f"field {i + 1}" for i in range(width))
    for role, i in index.items():
        if names[i].startswith("field "):
            names = names[:i] + (role,) + names[i + 1:]
    return DelimitedFormat(
        name="csv", summary="", columns=names,
        delimiter=None if delimiter is None else delimiter.encode(),
        time=Column(index["time"], names[index["time"]], TIME_UNITS[time_unit]),
        op=Column(index["op"], names[index["op"]]),
        offset=Column(index["offset"], names[index["offset"]], offset_unit),
        size=Column(index["size"], names[index["size"]], size_unit),
        ops=ops, fold_case=not case_sensitive, max_fields=1 << 20,
        header=True if header_names else header, drop_reason="drop_values")


def _stated_unit(role: str, option: str, given: Any, columns: Mapping[str, int | str],
                 index: Mapping[str, int], header_names: Sequence[str] | None,
                 named: Mapping[str, Any], values: str) -> Any:
    """The unit of a csv column: ``given``, else the one its header name states; a ValueError
    when neither states one (a trace's units are never guessed) or the two disagree."""
    name = None
    if header_names and index[role] < len(header_names):
        name = header_names[index[role]]
    elif isinstance(columns[role], str):
        name = columns[role]
    in_name = unit_in_name(name, named) if name else None
    column = f"{role} column {name!r}" if name else f"{role} column (field {index[role] + 1})"
    if given is None and in_name is None:
        raise ValueError(f"the unit of the {column} is not stated: give {option}= ({values}), or "
                         f"name the unit at the end of the column's header (e.g. '{role}_"
                         f"{'us' if role == 'time' else 'bytes'}'); hss-gym never guesses a unit")
    if given is not None and in_name is not None and given != in_name:
        raise ValueError(f"{option}={given!r} contradicts the {column}, whose name says "
                         f"{in_name!r}")
    return in_name if given is None else given



#: Supported formats: name -> one-line description (columns and units).
FORMATS: dict[str, str] = {
    **{name: fmt.summary for name, fmt in DELIMITED.items()},
    "blkparse": "blkparse default text output: maj,min cpu seq time(s) pid action RWBS sector "
                "+ nsectors [comm]; D (issue) events are the requests (event='Q': the queued "
                "bios), C events give latency",
    "fio": "fio iolog v2 (no times: synthesised with gap_us) and v3 (timestamp in µs)",
    "csv": "generic delimited text with a column map (columns=, time_unit=, offset_unit=, ...)",
    "cache": "hss-gym columnar trace cache (hss_gym.workloads.cache)",
}

#: The options each format takes (keyword arguments of load_trace after the general ones).
FORMAT_OPTIONS: dict[str, frozenset[str]] = {
    "fio": frozenset({"gap_us", "time_unit"}),
    "blkparse": frozenset({"event", "device"}),
    "csv": frozenset({"columns", "delimiter", "header", "time_unit", "offset_unit", "size_unit",
                      "read_values", "write_values", "drop_values", "case_sensitive"}),
}


def make_parser(name: str, path: str, first_line: bytes, options: Mapping[str, Any],
                engine: str = "auto") -> Parser:
    """A fresh parser for format ``name`` with the user's ``options`` (checked here)."""
    if name not in FORMATS or name == "cache":
        raise ValueError(f"unknown trace format {name!r}; supported: "
                         f"{', '.join(n for n in FORMATS if n != 'cache')}")
    unknown = set(options) - FORMAT_OPTIONS.get(name, set())
    if unknown:
        allowed = ", ".join(sorted(FORMAT_OPTIONS.get(name, ()))) or "none"
        raise TypeError(f"unknown option(s) {sorted(unknown)} for format {name!r} "
                        f"(accepted: {allowed})")
    if name in DELIMITED:
        return DelimitedParser(DELIMITED[name], path, engine)
    if name == "blkparse":
        return BlkparseParser(path, **options)
    if name == "fio":
        return FioParser(path, **options)
    opts = dict(options)
    if "columns" not in opts:
        raise TypeError("format 'csv' needs columns={'time': i, 'op': i, 'offset': i, "
                        "'size': i} (indices or header names)")
    if not isinstance(opts["columns"], Mapping):
        raise ValueError(f"columns must map time, op, offset and size to a field index or a "
                         f"header name, got {opts['columns']!r}")
    header_names = None
    if any(isinstance(c, str) for c in opts["columns"].values()):
        if opts.get("header") is False:
            raise ValueError("columns given by name need the header line (header is False)")
        delim = opts.get("delimiter", ",")
        line = first_line.rstrip(b"\r").decode("utf-8", "replace")
        header_names = line.split() if delim is None else [c.strip() for c in line.split(delim)]
        for col in opts["columns"].values():
            if isinstance(col, str) and col.strip().lower() not in (
                    n.lower() for n in header_names):
                raise TraceFormatError(f"column {col!r} is not in the header {header_names}",
                                       path=path, line=1, field=col)
    try:
        layout = csv_format(header_names=header_names, **opts)
    except ValueError as e:  # name the file whose layout it is (none when options are checked alone)
        raise TraceFormatError(str(e), path=path or None) from None
    return DelimitedParser(layout, path, engine)

