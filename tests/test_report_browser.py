"""The HTML report in a real browser: headless Chromium opens the page
and the test fails on a console error, an uncaught error, or a figure that does not load.

Needs Chromium (Debian: ``apt-get install chromium``; ``.ci/run`` installs it when it can); the test
skips, saying so, when no Chromium is on the PATH. It opens a report made here from a small bench
(every figure kind: ranking, learning curves, latency CDFs) and, when present, the committed
leaderboard's page.

A copy of each page gets a probe script at the top of its ``<head>`` (the report itself has no
scripts): it records ``console.error`` calls, uncaught errors and resource load errors, and, on
``load``, every image's state, into a ``<pre>`` that ``--dump-dom`` prints.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hss_gym.benchmarks import report as rep
from hss_gym.benchmarks.results import read_results

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
LEADERBOARD = ROOT / "benchmarks" / "leaderboard" / "hss-bench-v2" / "report.html"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

PROBE = """<script>
(function () {
  var out = {console_errors: [], errors: [], images: []};
  var err = console.error;
  console.error = function () {
    out.console_errors.push(Array.prototype.map.call(arguments, String).join(" "));
    return err.apply(console, arguments);
  };
  window.addEventListener("error", function (e) {
    var t = e.target || {};
    out.errors.push(t.tagName ? ("failed to load <" + t.tagName.toLowerCase() + "> "
                                 + String(t.src || t.href || "").slice(0, 80))
                              : String(e.message));
  }, true);
  window.addEventListener("unhandledrejection", function (e) { out.errors.push(String(e.reason)); });
  window.addEventListener("load", function () {
    Array.prototype.forEach.call(document.images, function (img) {
      out.images.push({alt: img.alt, complete: img.complete, width: img.naturalWidth,
                       height: img.naturalHeight});
    });
    var pre = document.createElement("pre");
    pre.id = "__probe";
    pre.textContent = "PROBE" + JSON.stringify(out) + "EBORP";
    document.body.appendChild(pre);
  });
})();
</script>"""


def _browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on the PATH (Debian: `apt-get install chromium`): the headless-browser "
                "check of the HTML report is skipped")


def _open(page: Path, tmp_path: Path) -> tuple[dict, str]:
    """Open ``page`` (with the probe) in headless Chromium; the probe's record and the browser's log."""
    text = page.read_text(encoding="utf-8")
    assert "<head>" in text, "the report has no <head>"
    probed = tmp_path / f"probed-{page.parent.name}-{page.name}"
    probed.write_text(text.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    cmd = [_browser(), "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--disable-extensions", "--enable-logging=stderr", "--v=0",
           f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000", "--dump-dom",
           probed.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="__probe">PROBE(\{.*?\})EBORP</pre>', proc.stdout, re.S)
    assert m, f"Chromium printed no probe (exit {proc.returncode}); stderr:\n{proc.stderr[-3000:]}"
    return json.loads(m.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")), proc.stderr


def _check(probe: dict, log: str, min_images: int) -> None:
    assert not probe["console_errors"], probe["console_errors"]
    assert not probe["errors"], probe["errors"]
    # Chromium's own log of the page's console (`CONSOLE(line)] "message"`) at error level
    console = [line for line in log.splitlines() if ":CONSOLE" in line and ":ERROR:" in line]
    assert not console, console
    imgs = probe["images"]
    assert len(imgs) >= min_images, f"{len(imgs)} images on the page, expected >= {min_images}"
    broken = [i["alt"] for i in imgs if not i["complete"] or i["width"] == 0 or i["height"] == 0]
    assert not broken, f"figures that did not load: {broken}"


@pytest.fixture(scope="module")
def bench_report(tmp_path_factory):
    """A small bench's report: 3 seeds, 2 workloads, the references (every figure kind)."""
    _browser()  # skip before running anything
    pytest.importorskip("matplotlib")
    from hss_gym.cli import main
    out = tmp_path_factory.mktemp("bench")
    rc = main(["bench", "--suite", "quick", "--configs", "perf_opt", "--workloads", "ycsb-b,lun2",
               "--policies", "slow_only,random", "--seeds", "0,1,2", "--n", "2000", "--jobs", "1",
               "--out", str(out), "--quiet", "--fresh"])
    assert rc in (0, None)
    return out / "report.html"


def test_the_html_report_loads_in_chromium_without_errors(bench_report, tmp_path):
    _browser()
    records = read_results(bench_report.parent / "results.jsonl")
    # the page the bench wrote, and one rebuilt from its results: the same report code
    _, page = rep.write_reports(records, tmp_path / "rebuilt")
    for p in (bench_report, page):
        probe, log = _open(p, tmp_path)
        _check(probe, log, min_images=3)  # ranking, learning curves, latency CDFs


def test_the_committed_leaderboard_loads_in_chromium_without_errors(tmp_path):
    _browser()
    if not LEADERBOARD.exists():
        pytest.skip(f"{LEADERBOARD.relative_to(ROOT)} is not in this checkout")
    probe, log = _open(LEADERBOARD, tmp_path)
    _check(probe, log, min_images=5)


def test_the_probe_catches_a_broken_figure_and_a_console_error(tmp_path):
    """The check itself: a page with a broken image and a console error fails it."""
    _browser()
    bad = tmp_path / "bad" / "report.html"
    bad.parent.mkdir()
    bad.write_text('<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body>'
                   '<img alt="broken" src="data:image/png;base64,AAAA">'
                   '<script>console.error("boom")</script></body></html>')
    probe, log = _open(bad, tmp_path)
    assert any("boom" in e for e in probe["console_errors"])
    with pytest.raises(AssertionError, match="boom|broken"):
        _check(probe, log, min_images=1)
    assert any(i["alt"] == "broken" and i["width"] == 0 for i in probe["images"])
