"""The train/test protocol: the training split is disjoint from every suite's
evaluation cells, and results carry a policy's declared training set (``trained_on``), which the
report shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hss_gym.benchmarks.report import markdown_report
from hss_gym.benchmarks.runner import make_jobs, run_job
from hss_gym.benchmarks.suites import list_suites, load_suite, parse_suite
from hss_gym.workloads import list_workloads, make_trace, synthetic, training
from hss_gym.workloads.registry import canonical_name

EVAL_SUITES = sorted(set(list_suites()) - {"train"})


@pytest.fixture(scope="module")
def traces_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with one trace file, for the ``real`` suite (every trace file of a folder)."""
    d = tmp_path_factory.mktemp("traces")
    (d / "t.csv").write_text("128166372000000000,src,0,Read,0,4096,100\n")
    return d


def _suite(name: str, traces_dir: Path) -> Any:
    return load_suite(name, traces_dir=traces_dir, check=False)


def _cells(name: str, traces_dir: Path) -> list[dict[str, Any]]:
    return make_jobs(_suite(name, traces_dir))


@pytest.mark.parametrize("suite", EVAL_SUITES)
def test_training_split_disjoint_from_the_suite(suite: str, traces_dir: Path) -> None:
    """No evaluation cell uses a training seed or a training workload, and no cell of the train
    suite is one of this suite's cells."""
    cells = _cells(suite, traces_dir)
    assert cells
    assert all(c["seed"] < training.TRAIN_SEED_START for c in cells), \
        sorted({c["seed"] for c in cells if c["seed"] >= training.TRAIN_SEED_START})
    assert not {c["workload"] for c in cells} & set(training.names())
    key = lambda c: (c["workload"], c["config"], c["seed"])  # noqa: E731
    assert not {key(c) for c in _cells("train", traces_dir)} & {key(c) for c in cells}


def test_train_suite_is_the_training_split(traces_dir: Path) -> None:
    cells = _cells("train", traces_dir)
    assert {c["seed"] for c in cells} >= set(training.train_seeds(3))
    assert all(c["seed"] >= training.TRAIN_SEED_START for c in cells)
    assert set(training.names()) <= {c["workload"] for c in cells}


def test_train_seeds_refuse_evaluated_seeds() -> None:
    assert training.train_seeds(2, 1500) == [1500, 1501]
    with pytest.raises(ValueError, match="TRAIN_SEED_START"):
        training.train_seeds(3, 0)


def _stats(name: str) -> tuple[float, float, float]:
    base, own = training.TRAIN_WORKLOADS[name]
    p = {**synthetic.default_params(base), **own}
    return p["read_fraction"], p["mean_size_kib"], p["mean_gap_us"]


@pytest.mark.parametrize("name", [n for n in training.names() if training.TRAIN_WORKLOADS[n][0] in synthetic.TARGETS])
def test_training_workloads_away_from_every_evaluated_one(name: str) -> None:
    """Each synthetic training workload differs by at least 15% in at least two of the three
    published statistics (read share, mean size, mean gap) from every workload of its family."""
    family = synthetic.FAMILIES[training.TRAIN_WORKLOADS[name][0]]
    mine = _stats(name)
    for w, t in synthetic.TARGETS.items():
        if synthetic.FAMILIES[w] != family:
            continue
        theirs = (t.read_pct / 100, t.size_kib, t.gap_us)
        far = sum(abs(a - b) >= 0.15 * max(a, b) for a, b in zip(mine, theirs))
        assert far >= 2, (name, w, mine, theirs)


def test_training_workloads_are_registered_and_generated_as_declared() -> None:
    for name in training.names():
        assert name in list_workloads() and canonical_name(name.replace("-", "_")) == name
    tr = make_trace("train-ycsb", n=4_000, seed=1000)
    assert tr.name == "train-ycsb" and tr.source["training_workload"] == "train-ycsb"
    reads = float((tr.op == 0).mean())
    assert reads == pytest.approx(0.65, abs=0.01)  # the training parameters, not ycsb-b's 51.3%


def test_no_catalogue_window_is_left_for_training_today(traces_dir: Path) -> None:
    """The real tracks evaluate every request of every catalogue trace."""
    assert training.catalogue_train_windows([_suite(s, traces_dir) for s in EVAL_SUITES]) == {}


def test_catalogue_windows_after_an_evaluated_prefix() -> None:
    suite = parse_suite({"name": "prefix", "version": 1, "description": "", "policies": ["random"],
                         "seeds": [0, 1, 2], "n_requests": 5_000,
                         "tracks": [{"name": "t", "configs": ["perf_opt"],
                                     "workloads": ["catalogue:msr-rsrch_1"]}]}, check=False)
    windows = training.catalogue_train_windows([suite])
    assert windows["msr-rsrch_1"] == (5_000, 13_780)
    assert windows["msr-excerpt-rw20"] == (0, 10_000)  # not evaluated at all by this suite


# ------------------------------------------------------------------ trained_on in results and report

def _job(**kw: Any) -> dict[str, Any]:
    return {"suite": "quick", "problem": "hss", "track": "perf_opt", "workload": "ycsb-b", "config": "perf_opt",
            "policy": "fit_first", "seed": 0, "n_requests": 500, "suite_digest": "x", **kw}


def test_a_policy_declares_its_training_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from hss_gym.agents.rules import FitFirst

    assert "trained_on" not in run_job(_job())  # not declared: nothing recorded (old boards unchanged)
    monkeypatch.setattr(FitFirst, "trained_on", "train")
    assert run_job(_job())["trained_on"] == "train"
    assert run_job(_job(trained_on="MSR src1_0"))["trained_on"] == "MSR src1_0"  # the bench's --trained-on wins


def test_bench_trained_on_recorded_for_the_named_policies(tmp_path: Path) -> None:
    from hss_gym.cli import main

    out = tmp_path / "b"
    rc = main(["bench", "--suite", "quick", "--policies", "random", "--workloads", "ycsb-b", "--tracks", "perf_opt",
               "--seeds", "0", "--n", "300", "--jobs", "1", "--no-oracle", "--trained-on", "train", "--out",
               str(out), "--quiet", "--no-figures"])
    assert rc == 0
    recs = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {(r["policy"], r.get("trained_on")) for r in recs} == {("random", "train"), ("fast_only", None)}
    report = (out / "report.md").read_text()
    assert "## Declared training sets" in report and "| random | train | 1 |" in report
    assert "| fast_only | not declared | 1 |" in report


def test_bench_trained_on_needs_policies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hss_gym.cli import main

    assert main(["bench", "--suite", "quick", "--trained-on", "train", "--out", str(tmp_path / "b"), "--dry-run"]) != 0
    assert "--trained-on declares the training set of the policies named by --policies" in capsys.readouterr().err


def test_report_without_declarations_has_no_training_section() -> None:
    rec = run_job(_job())
    assert "Declared training sets" not in markdown_report([rec])
    assert "| fit_first | train | 1 |" in markdown_report([{**rec, "trained_on": "train"}])
