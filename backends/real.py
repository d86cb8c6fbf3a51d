"""The real-device backend (``backend="uring"``): the HSS runs on files or block devices.

Why: the same experiment should run on real storage (e.g. a tmpfs file as the fast device and a
disk file as the slow one) and be compared with the simulator on the same machine (SPEC §6).

How: the HSS core keeps deciding where every page lives (its simulated timing becomes a shadow
model) and, with its I/O log on, records every device operation in order: host request runs
(device, slot, pages) and migrations/evictions as CREAD + CWRITE page copies. The C engine
``hss_gym.backends._uring`` (``backends/uring/engine.c``: raw io_uring syscalls, or pread/pwrite
per device) replays that log: each request's latency is *measured* (CLOCK_MONOTONIC) and replaces
the simulated one; copies run as real reads + writes at ``IOPRIO_CLASS_IDLE`` in idle time, one
page operation at a time, except a copy a request depends on, which runs first. Page ``p`` of a
device lives at byte ``slot * 4096``; the home (last) device maps page ``p`` to slot ``p``, so it
must span the trace's address space (the env sizes it from the trace).

Safety (data is part of the contract): files are never created or written on a kernel pseudo
file system (``/dev``'s devtmpfs, ``/proc``, ``/sys``, cgroup, debugfs, ... see :data:`PSEUDO_FS`,
read from ``/proc/self/mountinfo``; the ``/dev`` mount itself is refused whatever its type, while
a tmpfs mounted inside it such as ``/dev/shm`` is fine), even with ``allow_block_device=True``: a
mistyped block device (``/dev/sdz``) would otherwise become a RAM-backed regular file and the
"device" would be measured silently. Block devices are refused unless
``allow_block_device=True``, and even then a mounted/held device or one carrying a filesystem,
partition-table, swap, LVM, RAID or LUKS signature is refused unless ``force=True``; an existing
non-empty file is refused unless ``overwrite=True``; a read-only file, a directory without write
permission or a read-only mount is refused, also as root (who could write it anyway); the C engine
bounds-checks every I/O against the configured size.

Nothing left behind: files we create are recorded, then unlinked as soon as they
are open (unless ``keep_files=True``, which keeps them where they were created): the backend keeps
using them through its file descriptors and the kernel frees their blocks when the process closes
them or dies, so even a run killed by SIGKILL leaves nothing on disk. They are created sparse
(blocks allocated as the run writes them). A created file that could not be unlinked is removed on
:meth:`RealBackend.close`, also on SIGTERM and SIGHUP as on Ctrl-C; the files of a run killed
before its unlink are found and removed by the next run or by ``hss-gym clean``
(:mod:`hss_gym.backends.leftovers`).

Options (``backend_options=`` of the env/HSS, or keywords here): ``sizes`` (bytes per device,
``None`` entries derived), ``queue_depth`` (requests in flight in :meth:`run_fixed`; the env waits
for each request, since its reward needs the latency), ``engine`` ("auto": psync on tmpfs, where
io_uring punts every I/O to a worker thread, io_uring elsewhere; "uring"; "psync"; or one per
device), ``direct`` (None: O_DIRECT where the filesystem allows it; True: required; False:
buffered), ``timed`` (honour trace arrival times; default as fast as possible), ``verify``
(stamp/check every page), ``overwrite``, ``allow_block_device``, ``force``, ``keep_files``.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import Any, Sequence

import numpy as np

from hss_gym.backends import leftovers
from hss_gym.backends.base import READ, WRITE

PAGE = 4096
ENGINES = {"auto": -1, "uring": 0, "psync": 1}
_LOG_DTYPE = np.dtype([("page", "<u8"), ("slot", "<u8"), ("n", "<u4"), ("kind", "u1"), ("dev", "u1"),
                       ("pad", "u1", (2,))])
LOG_READ, LOG_WRITE, LOG_CREAD, LOG_CWRITE, LOG_END = range(5)

#: (byte offset, magic bytes, what it means) checked on block devices before writing to them
SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"LUKS\xba\xbe", "LUKS encrypted volume"),
    (0, b"XFSB", "XFS filesystem"),
    (0, b"hsqs", "squashfs filesystem"),
    (3, b"NTFS    ", "NTFS filesystem"),
    (54, b"FAT12   ", "FAT filesystem"),
    (54, b"FAT16   ", "FAT filesystem"),
    (82, b"FAT32   ", "FAT filesystem"),
    (510, b"\x55\xaa", "MBR partition table or boot sector"),
    (512, b"EFI PART", "GPT partition table"),
    (512, b"LABELONE", "LVM physical volume"),
    (1024, b"\x10\x20\xf5\xf2", "F2FS filesystem"),
    (1080, b"\x53\xef", "ext2/3/4 filesystem"),
    (4086, b"SWAPSPACE2", "swap area"),
    (4086, b"SWAP-SPACE", "swap area"),
    (4096, b"\xfc\x4e\x2b\xa9", "Linux RAID (md) member"),
    (0, b"\xfc\x4e\x2b\xa9", "Linux RAID (md) member"),
    (32769, b"CD001", "ISO 9660 filesystem"),
    (0x10040, b"_BHRfS_M", "btrfs filesystem"),
)
SIGNATURE_BYTES = 0x10040 + 8

#: File system types that hold no user data: a path on one of them is a kernel interface.
PSEUDO_FS = frozenset({
    "devtmpfs", "proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs",
    "configfs", "pstore", "bpf", "efivarfs", "fusectl", "mqueue", "devpts", "binfmt_misc",
    "autofs", "rpc_pipefs", "nsfs", "hugetlbfs", "selinuxfs"})


class UringUnavailable(RuntimeError):
    """The real-device backend cannot run here; the message says why."""


class UnsafeDeviceError(PermissionError):
    """A device was refused by the safety rules; the message says which rule and how to override."""


class VerifyError(RuntimeError):
    """Verify mode found a page that does not hold its latest version."""


def _load_ext() -> Any:
    if not sys.platform.startswith("linux"):
        raise UringUnavailable(f"the real-device backend needs Linux (io_uring); this is {sys.platform}. "
                               "The simulator (backend='sim') works everywhere.")
    try:  # local: the io_uring extension is optional (Linux with its headers); the simulator needs none of it
        from hss_gym.backends import _uring
    except ImportError as e:
        raise UringUnavailable(f"the C extension hss_gym.backends._uring is not built ({e}); rebuild with "
                               "`python setup.py build_ext --inplace` (needs a C compiler and Linux "
                               "headers with <linux/io_uring.h>). The simulator works without it.") from e
    return _uring


def unavailable_reason() -> str | None:
    """None if io_uring works here, else why not (extension missing, non-Linux, sysctl, seccomp)."""
    try:
        ext = _load_ext()
    except UringUnavailable as e:
        return str(e)
    return ext.probe()


def detect_signature(data: bytes) -> str | None:
    """The filesystem/partition signature found in a device's first bytes, or None."""
    for off, magic, what in SIGNATURES:
        if data[off:off + len(magic)] == magic:
            return what
    return None


def _sysfs_dev(rdev: int) -> str:
    return f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}"


def block_device_problems(path: str) -> list[str]:
    """Why writing to block device ``path`` could destroy data: mounts, holders, swap, signatures."""
    st = os.stat(path)
    problems: list[str] = []
    family = {st.st_rdev}  # the device and its partitions
    base = _sysfs_dev(st.st_rdev)
    try:
        for child in os.listdir(base):
            dev_file = os.path.join(base, child, "dev")
            if os.path.exists(os.path.join(base, child, "partition")) and os.path.exists(dev_file):
                major, minor = open(dev_file).read().strip().split(":")
                family.add(os.makedev(int(major), int(minor)))
    except OSError:
        pass
    for rdev in family:
        try:
            holders = os.listdir(os.path.join(_sysfs_dev(rdev), "holders"))
        except OSError:
            holders = []
        if holders:
            problems.append(f"held by {', '.join(holders)} (device mapper / RAID / LVM)")
    for table in ("/proc/self/mounts", "/proc/swaps"):
        try:
            lines = open(table).read().splitlines()
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if not fields or not fields[0].startswith("/"):
                continue
            try:
                s = os.stat(fields[0])
            except OSError:
                continue
            if stat.S_ISBLK(s.st_mode) and s.st_rdev in family:
                where = f"mounted at {fields[1]}" if table.endswith("mounts") else "in use as swap"
                problems.append(f"{fields[0]} is {where}")
    try:
        with open(path, "rb") as f:
            sig = detect_signature(f.read(SIGNATURE_BYTES))
        if sig:
            problems.append(f"carries a {sig} signature")
    except OSError as e:
        problems.append(f"cannot read its first bytes to look for signatures ({e})")
    return problems


def mount_of(path: str) -> tuple[str, str] | None:
    """(mount point, file system type) of the file system holding ``path`` (symbolic links
    resolved), from ``/proc/self/mountinfo``; None where that file does not exist."""
    target = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    best: tuple[str, str] | None = None
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields, fs = left.split(), right.split()
        if not sep or len(fields) < 5 or not fs:
            continue
        mnt = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])  # \040 = space
        inside = target == mnt or target.startswith(mnt.rstrip("/") + "/")
        if inside and (best is None or len(mnt) >= len(best[0])):  # a later mount shadows
            best = (mnt, fs[0])
    return best


def pseudo_fs_problem(path: str) -> str | None:
    """Why ``path`` (an existing file, or one to create) must not be used: it lies on a kernel
    pseudo file system or directly in ``/dev``; None if it may."""
    exists = os.path.exists(path)
    where = path if exists else os.path.dirname(os.path.abspath(path))
    found = mount_of(where)
    if found is None:
        return None
    mnt, fstype = found
    real = os.path.realpath(where)
    if mnt == "/dev" or fstype == "devtmpfs":
        try:
            names = sorted(os.listdir("/sys/block"))
        except OSError:
            names = []
        known = f" Block devices here: {', '.join('/dev/' + n for n in names)}." if names else ""
        state = "is not a block device" if exists else "does not exist"
        return (f"{path} {state}, and a file created in /dev ({fstype}) would live "
                f"in RAM and be measured as if it were a device. Is the device name mistyped?"
                f"{known}")
    if fstype in PSEUDO_FS or real in ("/proc", "/sys") or real.startswith(("/proc/", "/sys/")):
        return (f"{path} is on {mnt} ({fstype}), a kernel pseudo file system that stores no "
                "data; give a file on a real file system (or tmpfs) or an existing block device")
    return None


def _read_only_mount(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_path(path: str, *, overwrite: bool = False, allow_block_device: bool = False,
               force: bool = False) -> None:
    """Apply the safety rules to one device path; raise :class:`UnsafeDeviceError` if refused."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):  # the file would be created through the link: O_EXCL refuses
            raise UnsafeDeviceError(f"{path} is a dangling symbolic link (to {os.readlink(path)}, which "
                                    "does not exist): refused; remove the link, or give the path of a "
                                    "file to create") from None
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise FileNotFoundError(f"{path}: parent directory {parent} does not exist") from None
        problem = pseudo_fs_problem(path)
        if problem:
            raise UnsafeDeviceError(f"refused: {problem}") from None
        if _read_only_mount(parent):
            raise UnsafeDeviceError(f"{path}: refused, {parent} is on a read-only mount") from None
        if not os.stat(parent).st_mode & 0o222:
            raise UnsafeDeviceError(f"{path}: refused, its directory {parent} is read-only (mode "
                                    f"{stat.S_IMODE(os.stat(parent).st_mode):04o}), also as root; make it "
                                    f"writable to create the file there") from None
        return
    if (stat.S_ISREG(st.st_mode) or stat.S_ISBLK(st.st_mode)) and not st.st_mode & 0o222:
        raise UnsafeDeviceError(f"{path} is read-only (mode {stat.S_IMODE(st.st_mode):04o}): refused, also as "
                                f"root (who could write it anyway); make it writable (chmod u+w) to use it")
    if stat.S_ISREG(st.st_mode) and _read_only_mount(path):
        raise UnsafeDeviceError(f"{path}: refused, it is on a read-only mount")
    if stat.S_ISBLK(st.st_mode):
        if not allow_block_device:
            raise UnsafeDeviceError(f"{path} is a block device: refused (pass allow_block_device=True to "
                                    "use it; its contents within the configured size will be overwritten)")
        problems = block_device_problems(path)
        if problems and not force:
            raise UnsafeDeviceError(f"{path}: refused, it " + "; ".join(problems)
                                    + " (pass force=True to overwrite it anyway)")
    elif stat.S_ISREG(st.st_mode):
        problem = pseudo_fs_problem(path)
        if problem:
            raise UnsafeDeviceError(f"refused: {problem}")
        if st.st_size > 0 and not overwrite:
            raise UnsafeDeviceError(f"{path} exists and is not empty ({st.st_size} bytes): refused "
                                    "(pass overwrite=True to overwrite it)")
    else:
        raise UnsafeDeviceError(f"{path} is neither a regular file nor a block device")


class RealBackend:
    """Files or block devices driven by the C engine; see the module docstring for options."""

    name = "uring"

    def __init__(self, paths: Sequence[str | os.PathLike[str]], sizes: Sequence[int], *,
                 queue_depth: int = 32, engine: "str | Sequence[str]" = "auto", direct: bool | None = None,
                 timed: bool = False, verify: bool = False, overwrite: bool = False,
                 allow_block_device: bool = False, force: bool = False, keep_files: bool = False) -> None:
        self._engine: Any = None
        self._registration: leftovers.Registration | None = None
        ext = _load_ext()
        self.paths = [os.fspath(p) for p in paths]
        n = len(self.paths)
        if not 1 <= n <= 8:
            raise ValueError(f"need 1 to 8 device paths, got {n}")
        if len(sizes) != n:
            raise ValueError(f"{n} paths but {len(sizes)} sizes")
        self.sizes = [int(s) for s in sizes]
        for p, s in zip(self.paths, self.sizes):
            if s <= 0 or s % PAGE:
                raise ValueError(f"size of {p} must be a positive multiple of 4096 bytes, got {s}")
        engines = [engine] * n if isinstance(engine, str) else list(engine)
        if len(engines) != n or any(x not in ENGINES for x in engines):
            raise ValueError(f"engine must be one of {sorted(ENGINES)} or a list of one per device, got {engine!r}")
        if not isinstance(queue_depth, (int, np.integer)) or not 1 <= queue_depth <= ext.MAX_QUEUE_DEPTH:
            raise ValueError(f"queue_depth must be an int in 1..{ext.MAX_QUEUE_DEPTH}, got {queue_depth.item() if isinstance(queue_depth, np.generic) else queue_depth!r}")
        if direct not in (None, True, False):
            raise ValueError(f"direct must be None, True or False, got {direct!r}")
        real_paths = [os.path.realpath(p) for p in self.paths]
        for i, p in enumerate(real_paths):
            if p in real_paths[:i]:
                raise ValueError(f"the same file is given as devices {real_paths.index(p)} and {i}: {self.paths[i]}")
        gone = [lo for lo in leftovers.clean_leftovers() if lo.present]
        if gone:  # files of killed runs (SIGKILL): removed before we check or create ours
            import warnings
            warnings.warn("removed files left by killed hss-gym runs: " + ", ".join(
                f"{lo.path} (PID {lo.pid})" for lo in gone), stacklevel=2)
        for p in self.paths:
            check_path(p, overwrite=overwrite, allow_block_device=allow_block_device, force=force)
        if any(e != "psync" for e in engines) and any(e == "uring" for e in engines):
            why = ext.probe()
            if why:
                raise UringUnavailable(f"io_uring is unavailable: {why}. Use engine='psync' (pread/pwrite) instead.")
        flags = ext.O_CREATE | (ext.O_OVERWRITE if overwrite else 0) | (ext.O_ALLOW_BLOCK if allow_block_device else 0)
        flags |= {None: 0, True: ext.O_REQUIRE_DIRECT, False: ext.O_NO_DIRECT}[direct]
        self.queue_depth, self.timed, self.verify = int(queue_depth), bool(timed), bool(verify)
        self.keep_files = keep_files
        self._opts = dict(engines=[ENGINES[x] for x in engines], flags=flags)
        try:
            self._engine = ext.Engine(self.paths, self.sizes, self._opts["engines"], flags, self.queue_depth,
                                      self.verify, self.timed)
        except OSError as e:
            if "io_uring unavailable" in str(e):
                raise UringUnavailable(str(e)) from e
            raise
        self._one = np.zeros(1, dtype=np.float64)
        self._verify_errors = 0
        if not keep_files:
            # Recorded first, so that a run killed before the next line is cleaned up later; then
            # unlinked but kept open: their data lives as long as this process holds them, so a
            # SIGKILL leaves nothing on disk, and the record is no longer needed.
            self._registration = leftovers.Registration(self.created_files())
            if self._engine.unlink_created() == 0:
                self._registration.remove()
                self._registration = None
        leftovers.track(self)  # SIGTERM/SIGHUP close it (and remove its files) as Ctrl-C does

    # -- Backend protocol ------------------------------------------------------------------
    @property
    def n_devices(self) -> int:
        return len(self.paths)

    @property
    def engine(self) -> Any:
        if self._engine is None or self._engine.closed:
            raise ValueError("the real-device backend is closed")
        return self._engine

    def io(self, device: int, op: int, slot: int, npages: int, t: float, background: bool = False) -> float:
        """One synchronous I/O of ``npages`` pages at ``slot``; returns ``t`` + measured latency (µs)."""
        if not 0 <= device < self.n_devices or op not in (READ, WRITE) or npages < 1 or slot < 0:
            raise ValueError(f"bad I/O: device={device} op={op} slot={slot} npages={npages}")
        log = np.zeros(2, dtype=_LOG_DTYPE)
        log[0] = (slot, slot, npages, op, device, (0, 0))
        log[1] = (slot, 0, npages, LOG_END, 0, (0, 0))
        return t + self._run(log.tobytes(), np.array([t]))

    def free_at(self, device: int) -> float:
        """Real devices are asked, not modelled: always 0 (the engine finds idle time itself)."""
        return 0.0

    def reset(self, seed: int = 0) -> None:
        """Wait for all I/O, run pending copies, forget versions and counters (files keep data)."""
        self.engine.reset()
        self._verify_errors = 0

    def stats(self) -> list[dict[str, Any]]:
        return self.engine.stats()["devices"]

    def engine_stats(self) -> dict[str, Any]:
        return self.engine.stats()

    # -- driving it from the HSS core --------------------------------------------------------
    def check_request(self, t: float, offset: int, size: int) -> float:
        """Refuse a request beyond the home device (page p lives at byte p * 4096 there)."""
        if offset + size > self.sizes[-1]:
            raise ValueError(f"request [{offset}, {offset + size}) lies beyond the home device "
                             f"{self.paths[-1]} ({self.sizes[-1]} bytes); size it to the trace's "
                             "address span (backend_options={'sizes': [..., bytes]})")
        return t

    def check_trace(self, trace: Any) -> None:
        """Refuse a trace whose address span exceeds the home device."""
        if len(trace):
            end = int((trace.offset + trace.size).max())
            if end > self.sizes[-1]:
                self.check_request(0.0, 0, end)

    def _run(self, log: bytes, arrivals: np.ndarray) -> float:
        eng = self.engine
        eng.set_output(self._one)
        _, verrs = eng.execute(log, np.ascontiguousarray(arrivals, dtype=np.float64), True)
        self._check_verify(verrs)
        return float(self._one[0])

    def _check_verify(self, verrs: int) -> None:
        if verrs > self._verify_errors:
            self._verify_errors = verrs
            raise VerifyError(f"{verrs} verify error(s); first: {self.engine.stats()['verify_message']}")

    def complete(self, core: Any, arrival_us: float) -> float:
        """Run the core's logged I/O up to the request it just finished; its measured latency (µs)."""
        self._one[0] = np.nan
        eng = self.engine
        eng.set_output(self._one)
        _, verrs = eng.execute(core.take_log(), np.array([arrival_us]), True)
        self._check_verify(verrs)
        return float(self._one[0])

    def run_fixed(self, core: Any, trace: Any, place: int, chunk: int = 4096) -> tuple[np.ndarray, np.ndarray]:
        """Replay ``trace`` through ``core`` (already reset, log on) with ``queue_depth`` requests in
        flight; returns (measured latencies, simulated latencies) in µs."""
        self.check_trace(trace)
        n = len(trace)
        lat = np.full(n, np.nan)
        sim = np.empty(n)
        eng = self.engine
        eng.set_output(lat)
        verrs = 0
        for start in range(0, n, chunk):
            stop = min(n, start + chunk)
            core.replay(trace.time_us, trace.op, trace.offset, trace.size, place, sim, start, stop)
            _, verrs = eng.execute(core.take_log(), np.ascontiguousarray(trace.time_us[start:stop]), False)
        eng.flush()
        eng.set_output(None)
        self._check_verify(max(verrs, self.engine.stats()["verify_errors"]))
        return lat, sim

    def flush(self) -> None:
        """Wait for every request and run every pending migration copy."""
        self.engine.flush()

    def verify_all(self, core: Any) -> dict[str, int]:
        """Read back every page written in verify mode from where the core says it is; counts of
        pages checked, lost (wrong page/version) and corrupt (bad checksum)."""
        if not self.verify:
            raise RuntimeError("verify_all() needs verify=True")
        self.engine.execute(core.take_log(), np.empty(0), True)  # moves logged since the last request
        self.engine.flush()
        pages = np.frombuffer(self.engine.written_pages(), dtype=np.uint64)
        devs = np.empty(len(pages), dtype=np.uint8)
        slots = np.empty(len(pages), dtype=np.uint64)
        missing = 0
        keep = np.ones(len(pages), dtype=bool)
        for i, p in enumerate(pages.tolist()):
            w = core.where(p)
            if w is None:
                missing += 1
                keep[i] = False
            else:
                devs[i], slots[i] = w
        lost, corrupt = self.engine.verify(pages[keep].tobytes(), devs[keep].tobytes(), slots[keep].tobytes())
        return {"checked": int(keep.sum()), "lost": int(lost) + missing, "corrupt": int(corrupt),
                "message": self.engine.stats()["verify_message"]}

    def created_files(self) -> list[str]:
        """Paths of the files this backend created (unlinked since, unless ``keep_files``)."""
        return [d["path"] for d in self.stats() if d["created"]]

    def close(self) -> None:
        """Finish pending I/O and copies, close the files; remove files we created unless keep_files."""
        if self._engine is not None and not self._engine.closed:
            self._engine.close(not self.keep_files)
        if getattr(self, "_registration", None) is not None:
            self._registration.remove()
            self._registration = None
        leftovers.untrack(self)

    def __enter__(self) -> "RealBackend":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def hss_sizes(capacities: Sequence[int], options: dict[str, Any], span_pages: int | None) -> list[int]:
    """Device sizes in bytes for an HSS: bounded devices hold their capacity, the home device the
    trace's address span (``span_pages``), unless ``options['sizes']`` says otherwise."""
    n = len(capacities)
    given = options.get("sizes")
    if given is not None and len(given) != n:
        raise ValueError(f"sizes needs {n} entries (one per device, None to derive), got {len(given)}")
    out = []
    for d in range(n):
        s = given[d] if given is not None else None
        if s is None:
            if d < n - 1:
                s = int(capacities[d]) * PAGE
            elif span_pages:
                s = int(span_pages) * PAGE
            else:
                raise ValueError("the home (last) device's size is unknown: pass backend_options="
                                 "{'sizes': [..., home_bytes]} or 'span_pages' (it must cover the "
                                 "trace's address space: page p lives at byte p * 4096)")
        elif d < n - 1 and int(s) < int(capacities[d]) * PAGE:
            raise ValueError(f"device {d} is {s} bytes but the HSS gives it {capacities[d]} pages "
                             f"({int(capacities[d]) * PAGE} bytes); enlarge it or lower its fraction")
        out.append(int(s))
    return out


_BACKEND_KEYS = {"sizes", "span_pages", "queue_depth", "engine", "direct", "timed", "verify", "overwrite",
                 "allow_block_device", "force", "keep_files"}


def attach_real(backend: Any, paths: Sequence[str] | None, capacities: Sequence[int],
                options: dict[str, Any] | None, default_qd: int) -> tuple[RealBackend, list[int]]:
    """The real backend of an HSS (``backend="uring"`` opens one, a :class:`RealBackend` is reused)
    and the core's capacities (the home device's = its size in pages)."""
    if isinstance(backend, RealBackend):
        if backend.n_devices != len(capacities):
            raise ValueError(f"the backend has {backend.n_devices} devices, the configuration {len(capacities)}")
        hss_sizes(capacities, {"sizes": backend.sizes}, None)  # bounded devices large enough?
        return backend, list(capacities[:-1]) + [backend.sizes[-1] // PAGE]
    if backend != "uring":
        raise ValueError(f"unknown backend {backend!r}; available: 'sim', 'uring'")
    options = dict(options or {})
    unknown = set(options) - _BACKEND_KEYS
    if unknown:
        raise ValueError(f"unknown backend option(s) {sorted(unknown)}; valid: {sorted(_BACKEND_KEYS)}")
    if not paths or isinstance(paths, (str, bytes, os.PathLike)):
        raise ValueError("backend='uring' needs paths=[fast_path, ..., home_path], one file or block "
                         "device per device of the configuration")
    if len(paths) != len(capacities):
        raise ValueError(f"the configuration has {len(capacities)} devices but {len(paths)} paths were given")
    sizes = hss_sizes(capacities, options, options.pop("span_pages", None))
    options.pop("sizes", None)
    options.setdefault("queue_depth", default_qd)
    backend = RealBackend(paths, sizes, **options)
    caps = list(capacities[:-1]) + [sizes[-1] // PAGE]
    return backend, caps
