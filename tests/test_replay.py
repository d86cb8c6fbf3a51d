"""``hss-gym replay``'s work in :mod:`hss_gym.replay`: the reference replays into a resumable
results file, their table and their report. (The replays' numbers are checked against the device
model in test_model.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hss_gym import replay as rp
from hss_gym._version import __version__
from hss_gym.replay import REFERENCE_POLICIES, references_table, replay_references, write_references_report


def _count_replays(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The policies replayed from now on, in order (the replays still run)."""
    calls: list[str] = []
    real = rp.replay

    def counting(trace, config, policy, seed=0):
        calls.append(policy)
        return real(trace, config, policy, seed=seed)
    monkeypatch.setattr(rp, "replay", counting)
    return calls


def test_replays_are_recorded_once_and_resumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rpath = tmp_path / "results.jsonl"
    calls = _count_replays(monkeypatch)
    done = replay_references(["ycsb-b"], ["perf_opt", "cost_opt"], 1500, 3, rpath, progress=False)
    assert sorted(done) == sorted(("ycsb-b", c, p, 3) for c in ("perf_opt", "cost_opt") for p in REFERENCE_POLICIES)
    lines = [json.loads(x) for x in rpath.read_text().splitlines()]
    assert len(lines) == len(calls) == 6
    assert all(r["n"] == 1500 and r["seed"] == 3 and r["hss_gym_version"] == __version__ for r in lines)
    assert replay_references(["ycsb-b"], ["perf_opt"], 1500, 3, rpath, progress=False) == done
    assert len(calls) == 6, "a replay already recorded ran again"
    replay_references(["ycsb-b"], ["perf_opt"], 1500, 4, rpath, progress=False)  # another seed: new runs
    assert len(calls) == 9
    replay_references(["ycsb-b"], ["perf_opt"], 1500, 3, rpath, fresh=True, progress=False)
    assert len(calls) == 12 and len(rpath.read_text().splitlines()) == 3


def test_lines_that_are_not_replay_records_are_skipped(tmp_path: Path) -> None:
    rpath = tmp_path / "results.jsonl"
    rpath.write_text('not json\n{"schema": "hss-gym-result/1"}\n[1, 2]\n')
    done = replay_references(["ycsb-b"], ["perf_opt"], 1000, 0, rpath, progress=False)
    assert len(done) == len(REFERENCE_POLICIES)


def test_a_bad_name_fails_before_any_replay_or_file(tmp_path: Path) -> None:
    rpath = tmp_path / "results.jsonl"
    with pytest.raises(ValueError, match="no-such-config"):
        replay_references(["ycsb-b"], ["perf_opt", "no-such-config"], 1000, 0, rpath, progress=False)
    with pytest.raises(ValueError, match="no-such-workload"):
        replay_references(["no-such-workload"], ["perf_opt"], 1000, 0, rpath, progress=False)
    assert not rpath.exists() and not (tmp_path / "results.jsonl.lock").exists()


def _metrics(mean: float, wa: float | None) -> dict[str, float | None]:
    return {"mean_latency_us": mean, "p99_latency_us": 2 * mean, "p9999_latency_us": 3 * mean,
            "throughput_rps": 12_345.0, "write_amplification": wa, "fast_hit_ratio": 0.5}


def test_table_rows_relative_to_fast_only_and_na_without_writes() -> None:
    done = {("w", "c", "fast_only", 7): {"metrics": _metrics(10.0, 1.0)},
            ("w", "c", "slow_only", 7): {"metrics": _metrics(25.0, None)},
            ("w", "c", "lru", 7): {"metrics": _metrics(15.0, 1.25)},
            ("w", "c", "lru", 8): {"metrics": _metrics(99.0, 1.0)}}  # another seed: not shown
    rows = references_table(done, ["w"], ["c"], 7).splitlines()
    assert rows[0].startswith("| workload | config | policy |") and len(rows) == 2 + len(REFERENCE_POLICIES)
    assert rows[2] == "| w | c | fast_only | 10.0 | 20.0 | 30.0 | 12.3 | 1.000 | 0.500 | 1.00 |"
    assert rows[3] == "| w | c | slow_only | 25.0 | 50.0 | 75.0 | 12.3 | n/a | 0.500 | 2.50 |"
    assert rows[4] == "| w | c | lru | 15.0 | 30.0 | 45.0 | 12.3 | 1.250 | 0.500 | 1.50 |"


def test_report_says_version_requests_and_seed(tmp_path: Path) -> None:
    path = write_references_report(tmp_path / "a" / "b", "| t |", 100_000, 5)
    assert path == tmp_path / "a" / "b" / "report.md"
    assert path.read_text() == (f"# hss-gym reference replays\n\nhss-gym {__version__}; 100,000 requests per "
                                f"workload; seed 5.\n\n| t |\n")
