"""The real backend leaves nothing behind: a registry of the device files
a run created, cleanup on SIGTERM/SIGHUP, and removal of the files of runs that were killed.

Why: a real-backend run creates its device files (a tmpfs fast device, a slow-device file of up to
several GiB). Ctrl-C closes the backend, which removes them; a SIGTERM, SIGHUP or SIGKILL used to
leave them behind, and the example's file names carry the PID, so killed runs piled up. Now
:class:`RealBackend` unlinks the files it created as soon as they are open (it keeps
using them through their descriptors, and the kernel frees them with the process), so what this
module handles is the moment between creation and unlink, and a file that could not be unlinked.

* **Registry.** :class:`RealBackend` records every file it creates (path, device and inode) in
  ``<state dir>/<pid>-<start time>-<n>.json`` right after creating it, and removes the record once
  the files are unlinked (or removed on ``close()``). The state directory is ``$HSS_GYM_STATE_DIR``,
  else ``$XDG_STATE_HOME/hss-gym/real-files``, else ``~/.local/state/hss-gym/real-files``.
* **Signals.** While a backend is open, SIGTERM and SIGHUP close every open backend (removing the
  files it created, as Ctrl-C does), then the signal's previous disposition runs (by default the
  process dies of the signal, with the usual exit status). A signal the process ignores stays
  ignored (``nohup``). Installed only from the main thread (Python's rule for handlers).
* **Leftovers.** SIGKILL (or a power cut) cannot be caught: the record stays. The next
  :class:`RealBackend` and ``hss-gym clean`` find records whose process is gone (its PID is not
  running, or runs another program: its start time differs) and remove their files, but only a
  file that is still the one created (a regular file with the same device, inode and size, and
  where the file system keeps user xattrs the owner tag ``user.hss-gym.owner`` set at creation):
  a file created later under the same name is never touched. ``hss-gym clean --dry-run`` only
  lists them.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

STATE_ENV = "HSS_GYM_STATE_DIR"
XATTR = "user.hss-gym.owner"
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def state_dir() -> Path:
    """Where the records of created files live (see the module docstring)."""
    if os.environ.get(STATE_ENV):
        return Path(os.environ[STATE_ENV])
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "hss-gym" / "real-files"


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, /proc/PID/stat field 22), or
    None when it is not running: with the PID it identifies a process even after PID reuse."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return data.rsplit(")", 1)[1].split()[19]


_COUNTER = [0]
_LOCK = threading.Lock()


class Registration:
    """The record of the files one backend created (written at once, removed on close)."""

    def __init__(self, files: Iterable[str]) -> None:
        entries = []
        for f in files:
            try:
                st = os.stat(f)
            except OSError:
                continue
            entry = {"path": os.path.abspath(f), "dev": st.st_dev, "ino": st.st_ino, "size": st.st_size,
                     "tag": None}
            tag = f"{os.getpid()}:{process_start(os.getpid())}:{st.st_ino}".encode()
            try:  # where the file system keeps user xattrs, the strongest mark of our file
                os.setxattr(f, XATTR, tag)
                entry["tag"] = tag.decode()
            except OSError:
                pass
            entries.append(entry)
        self.path: Path | None = None
        if not entries:
            return
        with _LOCK:
            _COUNTER[0] += 1
            n = _COUNTER[0]
        d = state_dir()
        d.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        self.path = d / f"{pid}-{process_start(pid)}-{n}.json"
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"pid": pid, "start": process_start(pid), "files": entries}))
        os.replace(tmp, self.path)  # a complete record or none

    def remove(self) -> None:
        if self.path is not None:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
            self.path = None


@dataclass
class Leftover:
    """A file created by a run that is gone."""

    path: str
    pid: int
    record: Path
    present: bool  # the file is still there and is the one created


def _same_file(entry: dict[str, Any]) -> bool:
    try:
        st = os.lstat(entry["path"])
    except OSError:
        return False
    import stat as _stat
    if not (_stat.S_ISREG(st.st_mode) and st.st_dev == entry.get("dev") and st.st_ino == entry.get("ino")
            and st.st_size == entry.get("size")):
        return False
    if entry.get("tag"):  # inode numbers are reused: the owner tag must match too
        try:
            return os.getxattr(entry["path"], XATTR).decode() == entry["tag"]
        except OSError:
            return False
    return True


def find_leftovers() -> list[Leftover]:
    """Files recorded by runs whose process is gone (see the module docstring)."""
    d = state_dir()
    out: list[Leftover] = []
    if not d.is_dir():
        return out
    for rec in sorted(d.glob("*.json")):
        try:
            data = json.loads(rec.read_text())
            pid, start = int(data["pid"]), data.get("start")
            files = list(data["files"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not ours, or being written
        if process_start(pid) is not None and process_start(pid) == start:
            continue  # still running
        for e in files:
            out.append(Leftover(str(e.get("path")), pid, rec, _same_file(e)))
    return out


def clean_leftovers(dry_run: bool = False) -> list[Leftover]:
    """Remove the files of runs that are gone (only those still the files created) and their
    records; return what was found (``present``: the file was there, and removed unless
    ``dry_run``)."""
    found = find_leftovers()
    if dry_run:
        return found
    for lo in found:
        if lo.present:
            try:
                os.unlink(lo.path)
            except FileNotFoundError:
                pass
    for rec in {lo.record for lo in found}:
        try:
            rec.unlink()
        except FileNotFoundError:
            pass
    return found


# ------------------------------------------------------------------------------------ signals
_OPEN: "weakref.WeakSet[Any]" = weakref.WeakSet()
_PREVIOUS: dict[int, Any] = {}


def _on_signal(signum: int, frame: Any) -> None:
    """Close every open backend (removing the files it created), then let the signal do what it
    did before (by default: end the process with it)."""
    for backend in list(_OPEN):
        try:
            backend.close()
        except Exception:  # noqa: BLE001 - the files of the others must still go
            pass
    prev = _PREVIOUS.pop(signum, signal.SIG_DFL)
    signal.signal(signum, prev)
    if callable(prev):
        prev(signum, frame)
    elif prev != signal.SIG_IGN:
        os.kill(os.getpid(), signum)  # default action: die of the signal (exit status 128 + signum)


def track(backend: Any) -> None:
    """Clean ``backend`` up on SIGTERM/SIGHUP while it is open (handlers installed if needed)."""
    _OPEN.add(backend)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in SIGNALS:
        cur = signal.getsignal(sig)
        if cur is _on_signal or cur == signal.SIG_IGN or cur is None:
            continue  # ours already, or ignored on purpose (nohup), or set from C
        _PREVIOUS[sig] = cur
        signal.signal(sig, _on_signal)


def untrack(backend: Any) -> None:
    """``backend`` closed: restore the previous handlers when no backend is open."""
    _OPEN.discard(backend)
    if _OPEN or threading.current_thread() is not threading.main_thread():
        return
    for sig, prev in list(_PREVIOUS.items()):
        if signal.getsignal(sig) is _on_signal:
            signal.signal(sig, prev)
        del _PREVIOUS[sig]
