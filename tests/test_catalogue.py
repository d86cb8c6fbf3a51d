"""The pinned trace catalogue: its pins match the real files, downloads are verified by sha256
(from a local HTTP server on 127.0.0.1 serving ../shared/traces: no network), a cached file is
checked on every use, and offline or mismatching downloads fail clearly, keeping nothing."""
from __future__ import annotations

import functools
import hashlib
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hss_gym import cli
from hss_gym.workloads import catalogue as cat
from hss_gym.workloads.registry import check_workload, get_trace


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache directory (HSS_GYM_DATA), no mirror from the environment."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("HSS_GYM_DATA", str(folder))
    monkeypatch.delenv("HSS_GYM_MIRROR", raising=False)
    return folder


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass


def serve(directory: Path) -> tuple[str, http.server.ThreadingHTTPServer]:
    handler = functools.partial(QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/", server


@pytest.fixture
def mirror(shared_traces: Path) -> Iterator[str]:
    """A local HTTP server serving ../shared/traces by file name."""
    url, server = serve(shared_traces)
    yield url
    server.shutdown()
    server.server_close()


def test_pins_match_the_real_files(shared_traces: Path) -> None:
    assert len(cat.ENTRIES) == 8 and len(cat.CATALOGUE) == 8
    for e in cat.ENTRIES:
        data = (shared_traces / e.file).read_bytes()
        assert len(data) == e.size, e.name
        assert hashlib.sha256(data).hexdigest() == e.sha256, e.name
        assert e.commit is None or (len(e.commit) == 40 and e.url is not None
                                    and e.url.endswith("/" + e.commit + "/" + e.path))


def test_fetch_from_a_local_mirror_then_verified_on_every_use(cache: Path, mirror: str) -> None:
    path = cat.fetch("msr-rsrch_1", mirror=mirror)
    assert path == cache / "msr-rsrch_1.csv" and path.stat().st_size == 755_814
    assert [p.name for p in cache.iterdir()] == ["msr-rsrch_1.csv"]   # no temporary left
    trace = get_trace("catalogue:msr-rsrch_1")          # cached: no download needed
    assert len(trace) == 13_780 and trace.source["format"] == "msr"
    assert trace.source["catalogue"] == "msr-rsrch_1" and trace.name == "msr-rsrch_1"
    assert len(get_trace("catalogue:msr-rsrch_1", n=100)) == 100
    # a changed file in the cache is refused on use, never read nor silently replaced
    data = bytearray(path.read_bytes())
    data[100] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(cat.CatalogueError, match=r"not the pinned 'msr-rsrch_1'.*delete it"):
        get_trace("catalogue:msr-rsrch_1")
    path.write_bytes(bytes(data[:-1]))
    with pytest.raises(cat.CatalogueError, match="755,813 bytes, not 755,814"):
        cat.fetch("msr-rsrch_1", mirror=mirror)
    assert cat.fetch("msr-rsrch_1", mirror=mirror, force=True).stat().st_size == 755_814


def test_a_mismatching_or_failed_download_keeps_nothing(cache: Path, shared_traces: Path,
                                                        tmp_path: Path) -> None:
    bad = tmp_path / "bad-mirror"
    bad.mkdir()
    data = bytearray((shared_traces / "tpcc-small.trace").read_bytes())
    data[-2:-1] = b"0" if data[-2:-1] != b"0" else b"1"
    (bad / "tpcc-small.trace").write_bytes(bytes(data))
    (bad / "msr-rsrch_1.csv").write_bytes(b"128166481075232275,rsrch,1,Write,0,4096,1\n")
    url, server = serve(bad)
    try:
        with pytest.raises(cat.CatalogueError, match=r"does not match the pin.*nothing was kept"):
            cat.fetch("mqsim-tpcc-small", mirror=url)
        with pytest.raises(cat.CatalogueError, match=r"got 42 bytes, not 755,814"):
            cat.fetch("msr-rsrch_1", mirror=url)
        with pytest.raises(cat.CatalogueError, match="cannot download.*404"):
            cat.fetch("msnfs-disksim", mirror=url)
    finally:
        server.shutdown()
        server.server_close()
    # offline: nothing listens there any more
    with pytest.raises(cat.CatalogueError, match=r"cannot download .*offline\? put the file"):
        cat.fetch("msr-rsrch_1", mirror=url, timeout=5)
    assert not cache.exists() or not any(cache.iterdir())
    with pytest.raises(cat.CatalogueError, match="no pinned download URL"):
        cat.fetch("cloudphysics-io")  # no commit pinned: never a guessed URL


def test_names_and_the_command_line(cache: Path, mirror: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    check_workload("catalogue:msnfs-disksim")  # known: not downloaded to be checked
    with pytest.raises(ValueError, match="no trace 'nope' in the catalogue; its traces: msr-rsrch_1"):
        check_workload("catalogue:nope")
    assert cli.main(["traces", "list"]) == 0
    out = capsys.readouterr().out
    assert "msr-rsrch_1" in out and "not cached" in out and str(cache) in out
    assert cli.main(["traces", "info", "pcmark-disksim"]) == 0
    out = capsys.readouterr().out
    assert '"commit": "e1602a6fa63ea31c8320691e7b38684590a92f61"' in out and '"format": "disksim"' in out
    assert cli.main(["traces", "fetch", "mqsim-tpcc-small", "--mirror", mirror]) == 0
    assert "sha256 verified" in capsys.readouterr().out
    assert (cache / "tpcc-small.trace").is_file()
    assert cli.main(["traces", "fetch"]) == 2
    assert "needs trace names" in capsys.readouterr().err


def test_a_suite_names_catalogue_traces(cache: Path, shared_traces: Path) -> None:
    from hss_gym.benchmarks.problems.hss import load_job_trace
    from hss_gym.benchmarks.runner import make_jobs
    from hss_gym.benchmarks.suites import parse_suite
    cache.mkdir(parents=True)
    shutil.copy(shared_traces / "pcmark-disksim.trace", cache / "pcmark-disksim.trace")  # offline copy
    suite = parse_suite({"name": "cat", "policies": ["slow_only"], "seeds": [0], "n_requests": 500,
                         "tracks": [{"name": "real", "configs": ["perf_opt"],
                                     "workloads": ["catalogue:pcmark-disksim"]}]})
    trace = load_job_trace(make_jobs(suite)[0])
    assert len(trace) == 500 and trace.source["format"] == "disksim"
    assert trace.time_us[0] == 15_849_288.47


def test_a_killed_fetch_leaves_no_partial_download(cache: Path, mirror: str, tmp_path: Path) -> None:
    """SIGTERM: the fetch removes its .part file as it ends; SIGKILL (nothing runs): the next fetch
    of the file removes the .part of the dead process, and keeps a live one's."""
    import os
    import signal
    import subprocess
    import sys
    import time

    class Slow(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 - the base's name
            self.send_response(200)
            self.send_header("Content-Length", "755814")
            self.end_headers()
            self.wfile.write(b"0" * 65536)
            self.wfile.flush()
            time.sleep(30)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "hss_gym.cli", "traces", "fetch", "msr-rsrch_1", "--mirror",
                                 f"http://127.0.0.1:{server.server_address[1]}/"], stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while time.time() < deadline and not (cache.exists() and list(cache.glob("*.part"))):
            time.sleep(0.05)
        time.sleep(0.3)  # into the download loop
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 143
        assert not list(cache.glob("*.part"))
    finally:
        server.shutdown()
        server.server_close()

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = cache / f".msr-rsrch_1.csv.{int(dead.stdout)}.abc123.part"
    live = cache / f".msr-rsrch_1.csv.{os.getpid()}.def456.part"
    for part in (stale, live):
        part.write_bytes(b"x" * 1000)
    assert cat.fetch("msr-rsrch_1", mirror=mirror).stat().st_size == 755_814
    assert not stale.exists() and live.exists()
