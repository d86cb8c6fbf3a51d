"""The real backend leaves nothing behind: created device files
unlinked while open (a SIGTERM, SIGHUP or SIGKILL leaves nothing on disk) and sparse, leftovers of
runs killed before the unlink removed by the next run or by ``hss-gym clean``, and a read-only
target refused even as root."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hss_gym.backends import leftovers, real
from hss_gym.cli import main

WHY = real.unavailable_reason()
needs_ext = pytest.mark.skipif(WHY is not None and "not built" in WHY, reason=WHY or "")
SIZE = 64 << 20


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "state"
    monkeypatch.setenv(leftovers.STATE_ENV, str(d))
    return d


def _open_files(pid: int) -> list[str]:
    """What process ``pid``'s file descriptors point to (an unlinked file reads "PATH (deleted)")."""
    fds = Path(f"/proc/{pid}/fd")
    out = []
    for fd in fds.iterdir():
        try:
            out.append(os.readlink(fd))
        except OSError:
            pass
    return out


def _bytes_under(d: Path, skip: Path) -> int:
    """Bytes allocated to the files under ``d`` (``skip`` aside): what a run left on disk."""
    return sum(f.lstat().st_blocks * 512 for f in d.rglob("*") if f.is_file() and skip not in f.parents)


def _run_backend(paths: list[Path], state: Path, sig: int, inherited: int = signal.SIG_DFL,
                 write_mib: int = 0) -> subprocess.Popen[str]:
    """A process that opens a RealBackend on ``paths`` (creating them), writes a page (and
    ``write_mib`` MiB more to the last device), then is sent ``sig``. It starts with ``inherited``
    as its disposition of SIGTERM and SIGHUP (default: SIG_DFL, whatever the test runner has, e.g.
    SIGHUP ignored under ``nohup``). While it runs, the files it created are open but unlinked."""
    code = textwrap.dedent(f"""
        import faulthandler, signal, time
        faulthandler.enable()  # a SIGABRT from the test below prints where the process hangs
        for s in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.Handlers({int(inherited)}))
        from hss_gym.backends import real
        b = real.RealBackend({[str(p) for p in paths]!r}, [{SIZE}] * {len(paths)}, engine="psync")
        b.io(0, 1, 0, 1, 0.0)
        for mib in range({write_mib}):
            b.io({len(paths) - 1}, 1, mib * 256, 256, 0.0)
        print("ready", flush=True)
        # Short sleeps: a signal the kernel hands to another thread (NumPy's OpenBLAS workers)
        # does not cut the main thread's sleep short, and Python runs handlers in the main thread
        # only, so one long sleep would delay the handler to its end (a rare 60 s hang).
        for _ in range(600):
            time.sleep(0.1)
    """)
    env = {**os.environ, leftovers.STATE_ENV: str(state)}
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    assert not any(x.exists() for x in paths) and not list(state.glob("*.json"))
    held = _open_files(p.pid)
    assert all(f"{x} (deleted)" in held for x in paths), held
    p.send_signal(sig)
    try:
        p.wait(timeout=60 if inherited == signal.SIG_DFL else 3)
    except subprocess.TimeoutExpired:
        if inherited == signal.SIG_DFL:  # it should have died: have it print its threads' stacks
            p.send_signal(signal.SIGABRT)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if p.poll() is None:
            p.kill()
            p.wait()
    return p


def _killed_before_unlink(paths: list[Path], state: Path) -> int:
    """A run SIGKILLed after creating and recording its files but before unlinking them (or whose
    unlink failed): they stay on disk with their record. Returns its PID."""
    code = textwrap.dedent(f"""
        import os, signal
        from hss_gym.backends import leftovers
        paths = {[str(p) for p in paths]!r}
        for p in paths:
            with open(p, "xb") as f:
                f.write(b"x" * 65536)
        leftovers.Registration(paths)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    env = {**os.environ, leftovers.STATE_ENV: str(state)}
    p = subprocess.Popen([sys.executable, "-c", code], env=env)
    assert p.wait(timeout=60) == -signal.SIGKILL and all(x.exists() for x in paths)
    return p.pid


@needs_ext
def test_created_files_are_unlinked_while_open_and_sparse(tmp_path: Path, state: Path) -> None:
    """A created file is unlinked as soon as it is open (no record needed then): the backend works
    through its descriptor; the file is sparse; keep_files=True keeps it where it was created."""
    f = tmp_path / "slow.img"
    with real.RealBackend([str(f)], [SIZE], engine="psync") as b:
        b.io(0, 1, 0, 1, 0.0)  # one page written
        assert b.io(0, 0, 0, 1, 0.0) >= 0.0  # and read back through the descriptor
        assert not f.exists() and not list(state.glob("*.json"))
        fd = next(p for p in Path("/proc/self/fd").iterdir() if os.readlink(p) == f"{f} (deleted)")
        st = os.stat(fd)
        assert st.st_size == SIZE and st.st_blocks * 512 < SIZE // 8  # not allocated up front
        assert b.stats()[0]["created"] and b.stats()[0]["unlinked"]
        assert b.created_files() == [str(f)]
    assert not f.exists() and not list(state.glob("*.json"))
    with real.RealBackend([str(f)], [SIZE], engine="psync", keep_files=True) as b:
        b.io(0, 1, 0, 1, 0.0)
        assert f.exists() and not b.stats()[0]["unlinked"] and not list(state.glob("*.json"))
    assert f.stat().st_size == SIZE and f.stat().st_blocks * 512 < SIZE // 8
    f.unlink()


@needs_ext
def test_a_replaced_name_is_never_unlinked(tmp_path: Path, state: Path) -> None:
    """The engine unlinks a created file only while its name still names the file it holds open:
    a file put in its place meanwhile is not touched."""
    ext = real._load_ext()
    f = tmp_path / "dev.img"
    eng = ext.Engine([str(f)], [SIZE], [ext.ENGINE_PSYNC], ext.O_CREATE, 1, False, False)
    try:
        f.rename(tmp_path / "moved.img")
        f.write_bytes(b"someone else's data")
        assert eng.unlink_created() == 1  # one created file stays linked (under its new name)
        assert f.read_bytes() == b"someone else's data" and (tmp_path / "moved.img").exists()
    finally:
        eng.close(False)


@needs_ext
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_leave_nothing(tmp_path: Path, state: Path, sig: int) -> None:
    paths = [tmp_path / "fast.img", tmp_path / "slow.img"]
    p = _run_backend(paths, state, sig)
    assert p.returncode == -sig  # the process still dies of the signal
    assert not any(x.exists() for x in paths)
    assert not list(state.glob("*.json"))


@needs_ext
def test_an_ignored_sighup_stays_ignored(tmp_path: Path, state: Path) -> None:
    """A run started with SIGHUP ignored (``nohup``) is not ended by a hangup because a backend is
    open: the backend adds no handler where the signal was ignored (the run ends later, here killed)."""
    paths = [tmp_path / "fast.img", tmp_path / "slow.img"]
    p = _run_backend(paths, state, signal.SIGHUP, inherited=signal.SIG_IGN)
    assert p.returncode == -signal.SIGKILL  # survived the hangup; killed by the test after 3 s


@needs_ext
def test_a_sigkilled_run_leaves_less_than_64_mib(tmp_path: Path, state: Path) -> None:
    """A run that wrote 48 MiB of its 64 MiB slow device and a page of its fast one, then was
    SIGKILLed: nothing of it stays on disk, no file, no block, no record (its files were unlinked
    while open, so the kernel freed them with the process; they used to stay, all that was
    written of them)."""
    paths = [tmp_path / "fast.img", tmp_path / "slow.img"]
    p = _run_backend(paths, state, signal.SIGKILL, write_mib=48)
    assert p.returncode == -signal.SIGKILL
    left = _bytes_under(tmp_path, state)
    assert left < 64 << 20 and left == 0, left
    assert not list(tmp_path.glob("*.img")) and not list(state.glob("*.json"))
    assert leftovers.find_leftovers() == []


@needs_ext
def test_leftovers_removed_by_clean(tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Files of a run killed before their unlink (recorded) are removed by ``hss-gym clean``."""
    paths = [tmp_path / "fast.img", tmp_path / "slow.img"]
    pid = _killed_before_unlink(paths, state)
    found = leftovers.clean_leftovers(dry_run=True)
    assert sorted(lo.path for lo in found) == sorted(map(str, paths)) and all(lo.present for lo in found)
    assert main(["clean", "--dry-run"]) == 0 and all(x.exists() for x in paths)
    assert "would remove" in capsys.readouterr().out
    assert main(["clean"]) == 0
    out = capsys.readouterr().out
    assert f"PID {pid}" in out and "2 leftover file(s)" in out
    assert not any(x.exists() for x in paths) and not list(state.glob("*.json"))


@needs_ext
def test_leftovers_removed_by_the_next_run_but_not_a_new_file(tmp_path: Path, state: Path) -> None:
    paths = [tmp_path / "fast.img", tmp_path / "slow.img"]
    _killed_before_unlink(paths, state)
    paths[1].unlink()
    paths[1].write_bytes(b"someone else's data")  # same name, another file: never touched
    with pytest.warns(UserWarning, match="removed files left by killed hss-gym runs"):
        with real.RealBackend([str(tmp_path / "other.img")], [SIZE], engine="psync"):
            pass
    assert not paths[0].exists() and paths[1].read_bytes() == b"someone else's data"
    assert not list(state.glob("*.json"))


def test_a_running_process_files_are_not_leftovers(tmp_path: Path, state: Path) -> None:
    f = tmp_path / "mine.img"
    f.write_bytes(b"x")
    reg = leftovers.Registration([str(f)])
    try:
        assert leftovers.find_leftovers() == []  # this process is alive
    finally:
        reg.remove()


def test_read_only_file_refused_even_as_root(tmp_path: Path) -> None:
    f = tmp_path / "ro.img"
    f.write_bytes(b"")
    f.chmod(0o444)
    with pytest.raises(real.UnsafeDeviceError, match=r"read-only \(mode 0444\).*also as root"):
        real.check_path(str(f), overwrite=True)
    d = tmp_path / "ro_dir"
    d.mkdir()
    d.chmod(0o555)
    try:
        with pytest.raises(real.UnsafeDeviceError, match="read-only"):
            real.check_path(str(d / "new.img"))
    finally:
        d.chmod(0o755)


@needs_ext
def test_read_only_file_refused_by_the_backend(tmp_path: Path, state: Path) -> None:
    f = tmp_path / "ro.img"
    f.write_bytes(b"")
    f.chmod(0o444)
    with pytest.raises(real.UnsafeDeviceError, match="read-only"):
        real.RealBackend([str(f)], [SIZE], engine="psync", overwrite=True)
    assert f.read_bytes() == b"" and f.stat().st_size == 0  # not written, not resized
