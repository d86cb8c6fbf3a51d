"""The real backend leaves nothing behind (issue 31, deliverable 3): sparse device files, cleanup
on SIGTERM/SIGHUP as on Ctrl-C, leftovers of SIGKILLed runs removed by the next run or by
``hss-gym clean``, and a read-only target refused even as root."""

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


def _run_backend(paths: list[Path], state: Path, sig: int,
                 inherited: int = signal.SIG_DFL) -> subprocess.CompletedProcess[str]:
    """A process that opens a RealBackend on ``paths`` (creating them), writes a little, then is
    sent ``sig``. It starts with ``inherited`` as its disposition of SIGTERM and SIGHUP (default:
    SIG_DFL, whatever the test runner has, e.g. SIGHUP ignored under ``nohup``)."""
    code = textwrap.dedent(f"""
        import signal, time
        for s in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.Handlers({int(inherited)}))
        from hss_gym.backends import real
        b = real.RealBackend({[str(p) for p in paths]!r}, [{SIZE}] * {len(paths)}, engine="psync")
        b.io(0, 1, 0, 1, 0.0)
        print("ready", flush=True)
        time.sleep(60)
    """)
    env = {**os.environ, leftovers.STATE_ENV: str(state)}
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    assert all(x.exists() for x in paths)
    p.send_signal(sig)
    try:
        p.wait(timeout=60 if inherited == signal.SIG_DFL else 3)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    return p  # type: ignore[return-value]


@needs_ext
def test_files_are_sparse(tmp_path: Path, state: Path) -> None:
    f = tmp_path / "slow.img"
    with real.RealBackend([str(f)], [SIZE], engine="psync") as b:
        b.io(0, 1, 0, 1, 0.0)  # one page written
        st = os.stat(f)
        assert st.st_size == SIZE and st.st_blocks * 512 < SIZE // 8  # not allocated up front
        assert len(list(state.glob("*.json"))) == 1  # recorded while open
    assert not f.exists() and not list(state.glob("*.json"))


@needs_ext
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_remove_the_files(tmp_path: Path, state: Path, sig: int) -> None:
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
def test_sigkill_leftovers_removed_by_clean(tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [tmp_path / "fast.img", tmp_path / "slow.img"]
    p = _run_backend(paths, state, signal.SIGKILL)
    assert p.returncode == -signal.SIGKILL and all(x.exists() for x in paths)
    found = leftovers.clean_leftovers(dry_run=True)
    assert sorted(lo.path for lo in found) == sorted(map(str, paths)) and all(lo.present for lo in found)
    assert main(["clean", "--dry-run"]) == 0 and all(x.exists() for x in paths)
    assert "would remove" in capsys.readouterr().out
    assert main(["clean"]) == 0
    out = capsys.readouterr().out
    assert f"PID {p.pid}" in out and "2 leftover file(s)" in out
    assert not any(x.exists() for x in paths) and not list(state.glob("*.json"))


@needs_ext
def test_sigkill_leftovers_removed_by_the_next_run_but_not_a_new_file(tmp_path: Path, state: Path) -> None:
    paths = [tmp_path / "fast.img", tmp_path / "slow.img"]
    _run_backend(paths, state, signal.SIGKILL)
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
