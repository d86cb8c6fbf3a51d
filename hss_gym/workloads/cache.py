"""Columnar trace cache: a parsed :class:`~hss_gym.workloads.trace.Trace` in one binary file.

Parsing a text trace costs seconds per hundred million lines and is repeated by every training
run; the cache stores the parsed columns so that loading is a memory map. One file per trace:

========  ======  ===========================================================================
offset    bytes   content
========  ======  ===========================================================================
0         8       magic ``b"HSSTRACE"``
8         4       format version, uint32 little-endian (:data:`VERSION`)
12        4       header length ``H``, uint32 little-endian
16        H       header, UTF-8 JSON (below)
...               column data: each array raw, little-endian, C order, starting at a multiple
                  of 64 bytes, at the offset given in the header
========  ======  ===========================================================================

The header is ``{"n": requests, "name": ..., "source": {...}, "arrays": [{"name", "dtype",
"offset", "length"}, ...], "writer": "hss-gym <version>"}``. ``arrays`` holds the Trace columns
(``time_us`` ``<f8``, ``op`` ``|u1``, ``offset`` ``<i8``, ``size`` ``<i8``, ``stream`` ``<u2``)
and, under the name ``source.<key>``, any NumPy array found in ``source`` (e.g. blkparse
``latency_us``). ``source`` keeps the provenance of the original trace (path, format, sha256 of
the original file), so a result measured on a cached trace names the same requests.

A reader refuses other versions with a clear message; any change of layout or meaning must bump
:data:`VERSION`. :func:`~hss_gym.workloads.readers.load_trace` recognises a cache by its magic
bytes and reads it transparently.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from hss_gym._version import __version__
from hss_gym.workloads.trace import COLUMNS, Trace, TraceFormatError

MAGIC = b"HSSTRACE"
VERSION = 1
_ALIGN = 64
_PREFIX = struct.Struct("<8sII")


def is_cache(path: str | Path) -> bool:
    """True if ``path`` is a regular file that starts with the cache magic bytes."""
    if not os.path.isfile(path):  # never open a FIFO here (it could block): the readers refuse it
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC)) == MAGIC
    except OSError:  # not readable: the caller's own open reports why
        return False


def _new_file_mode() -> int:
    """The mode ``open(path, "w")`` gives a new file: 0666 less the process's umask (read by
    setting it and putting it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def save_cache(trace: Trace, path: str | Path) -> Path:
    """Write ``trace`` to ``path`` (atomically: a temporary file renamed into place).

    One-dimensional NumPy arrays in ``trace.source`` are stored as extra arrays; the other
    source values must be JSON-serialisable (NumPy scalars are converted).
    """
    path = Path(path)
    source = {k: v for k, v in trace.source.items() if not isinstance(v, np.ndarray)}
    arrays = [(col, getattr(trace, col)) for col in COLUMNS]
    arrays += [(f"source.{k}", v) for k, v in trace.source.items() if isinstance(v, np.ndarray)]
    layout, offset = [], 0
    for name, arr in arrays:
        if arr.ndim != 1 or arr.dtype.hasobject:
            raise TypeError(f"{name} cannot be stored in a cache: only 1-D numeric arrays can")
        layout.append({"name": name, "dtype": arr.dtype.newbyteorder("<").str,
                       "offset": offset, "length": len(arr)})
        offset += -(-arr.nbytes // _ALIGN) * _ALIGN
    header = {"n": len(trace), "name": trace.name, "source": source, "arrays": layout,
              "writer": f"hss-gym {__version__}"}
    try:
        blob = json.dumps(header, default=_json_default, allow_nan=True).encode()
    except TypeError as exc:
        raise TypeError(f"trace.source cannot be stored in a cache: {exc}") from None
    start = -(-(_PREFIX.size + len(blob)) // _ALIGN) * _ALIGN
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        os.fchmod(fd, _new_file_mode())  # mkstemp's 0600 would hide the cache from the user's group
        with os.fdopen(fd, "wb") as fh:
            fh.write(_PREFIX.pack(MAGIC, VERSION, len(blob)))
            fh.write(blob)
            for (_, arr), entry in zip(arrays, layout):
                fh.seek(start + entry["offset"])
                fh.write(memoryview(np.ascontiguousarray(arr, dtype=entry["dtype"])).cast("B"))
            fh.truncate(start + offset)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def load_cache(path: str | Path, *, mmap_mode: bool = True, validate: bool = True) -> Trace:
    """Read a cache written by :func:`save_cache`.

    With ``mmap_mode`` (default) the columns are read-only views of a memory map (the OS pages
    them in on use, so even huge traces open instantly); otherwise they are read into (writable)
    memory.
    ``validate`` re-checks the Trace invariants (cheap; guards against damaged files).
    ``source["cache"]`` records the cache path and version.
    """
    path = Path(path)
    with open(path, "rb") as fh:
        prefix = fh.read(_PREFIX.size)
        if len(prefix) < _PREFIX.size or prefix[:8] != MAGIC:
            raise TraceFormatError("not an hss-gym trace cache (bad magic bytes)", path=str(path))
        _, version, hlen = _PREFIX.unpack(prefix)
        if version != VERSION:
            raise TraceFormatError(
                f"trace cache format version {version} is not supported (this hss-gym reads "
                f"version {VERSION}); re-create the cache from the original trace with "
                "hss_gym.workloads.convert()", path=str(path))
        try:
            header = json.loads(fh.read(hlen))
            n = int(header["n"])
            layout = {a["name"]: (np.dtype(a["dtype"]), int(a["offset"]), int(a["length"]))
                      for a in header["arrays"]}
            start = -(-(_PREFIX.size + hlen) // _ALIGN) * _ALIGN
            size = os.fstat(fh.fileno()).st_size
            for name, (dtype, offset, length) in layout.items():
                if offset < 0 or length < 0 or start + offset + length * dtype.itemsize > size:
                    raise ValueError(f"array {name!r} lies outside the file")
            if any(layout[c][2] != n or layout[c][0] != COLUMNS[c] for c in COLUMNS):
                raise ValueError("column lengths or dtypes do not match the header")
        except (ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
            raise TraceFormatError(f"damaged trace cache header ({exc})", path=str(path)) from None
        if mmap_mode and size > start and hasattr(mmap, "MAP_SHARED"):
            # validation reads every page anyway: then map them all in one system call
            populate = getattr(mmap, "MAP_POPULATE", 0) if validate else 0
            buf: Any = mmap.mmap(fh.fileno(), 0, flags=mmap.MAP_SHARED | populate,
                                 prot=mmap.PROT_READ)
        elif mmap_mode and size > start:
            buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        else:
            fh.seek(0)
            buf = bytearray(size)
            fh.readinto(buf)
    arrays = {name: np.frombuffer(buf, dtype=dtype, count=length, offset=start + offset)
              for name, (dtype, offset, length) in layout.items()}
    source = dict(header.get("source", {}))
    source.update({k[len("source."):]: v for k, v in arrays.items() if k.startswith("source.")})
    source["cache"] = {"path": str(path), "version": VERSION}
    trace = Trace(arrays["time_us"], arrays["op"], arrays["offset"], arrays["size"],
                  arrays["stream"], name=str(header.get("name", path.stem)), source=source)
    return validated(trace) if validate else trace


def validated(trace: Trace) -> Trace:
    """``trace.validate()``, faster: the invariants are first checked with reductions (no large
    temporary arrays, which matters on a freshly mapped file); only a trace that fails goes
    through ``Trace.validate``, which raises naming the field."""
    t = trace.time_us
    if not (len(t) and trace.size.min() > 0 and trace.offset.min() >= 0 and trace.op.max() <= 1
            and np.isfinite(t.min()) and np.isfinite(t.max())
            and (len(t) < 2 or (t[1:] >= t[:-1]).all())):
        trace.validate()
    return trace


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (Path, tuple, set)):
        return str(value) if isinstance(value, Path) else list(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")
