"""The workload registry: names, aliases, errors, and the name-or-path entry point."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hss_gym.workloads import Trace, registry
from hss_gym.workloads.registry import (canonical_name, get_trace, list_workloads, load_trace,
                                        make_trace)

EXPECTED = (["lun0", "lun1", "lun2", "lun3", "lun4", "ssd-00", "ssd-01", "ssd-02", "ssd-03",
             "ssd-04", "ycsb-a", "ycsb-b", "ycsb-c", "ycsb-d", "ycsb-e", "ycsb-f", "resnet50",
             "cosmoflow"] + [f"mix{i}" for i in range(1, 7)])


def test_list_workloads() -> None:
    assert list_workloads() == EXPECTED + ["learn-hot-scan", "learn-write-once", "learn-phase", "train-vdi",
                                           "train-rocksdb", "train-ycsb", "train-mlperf", "train-hot-scan"]


@pytest.mark.parametrize("name", EXPECTED)
def test_make_trace_every_name(name: str) -> None:
    tr = make_trace(name, n=1_500, seed=1)
    assert len(tr) == 1_500 and tr.name == name
    assert tr.source["generator"] == name and tr.source["seed"] == 1


@pytest.mark.parametrize("alias,name", [("YCSB-B", "ycsb-b"), ("ycsb_b", "ycsb-b"),
                                        ("ycsbb", "ycsb-b"), ("SSD_00", "ssd-00"),
                                        ("ssd00", "ssd-00"), (" LUN0 ", "lun0"),
                                        ("ResNet50", "resnet50"), ("Mix6", "mix6")])
def test_names_are_case_insensitive(alias: str, name: str) -> None:
    assert canonical_name(alias) == name
    a, b = make_trace(alias, n=500), make_trace(name, n=500)
    np.testing.assert_array_equal(a.offset, b.offset)


def test_make_trace_passes_params() -> None:
    tr = make_trace("ycsb-c", n=2_000, seed=0, footprint_gib=1.0)
    assert (tr.offset + tr.size).max() <= 1 << 30
    tr = make_trace("mix3", n=2_000, seed=0, footprint_scale=0.5)
    assert tr.source["params"]["footprint_scale"] == 0.5


def test_unknown_name_lists_valid_names_and_suggests() -> None:
    with pytest.raises(ValueError) as err:
        make_trace("ycsb-g")
    msg = str(err.value)
    assert "did you mean" in msg.lower() and "'ycsb-" in msg
    assert all(name in msg for name in EXPECTED)
    with pytest.raises(ValueError, match="Did you mean 'cosmoflow'"):
        make_trace("cosmoflo")
    with pytest.raises(ValueError, match="unknown workload"):
        make_trace("zzzzzz")
    assert canonical_name("ssd-9") is None


def test_get_trace_by_name_and_trace() -> None:
    tr = get_trace("lun2", n=1_000, seed=4)
    assert len(tr) == 1_000 and tr.source["seed"] == 4
    assert len(get_trace("lun2")) == 100_000  # the default n
    assert get_trace(tr) is tr
    assert len(get_trace(tr, n=10)) == 10


def test_get_trace_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Did you mean 'ycsb-b'"):
        get_trace("ycsb-bb")
    with pytest.raises(FileNotFoundError):
        get_trace(str(tmp_path / "missing.csv"))
    with pytest.raises(FileNotFoundError):
        get_trace(tmp_path / "missing")


@pytest.fixture
def fake_readers(monkeypatch: pytest.MonkeyPatch) -> list:
    """A stand-in for ``hss_gym.workloads.readers.load_trace`` (as the registry calls it) that
    records the calls it receives."""
    calls: list = []

    def fake_load(path, format=None, limit=None, **kwargs):  # noqa: A002 - the real signature
        calls.append((str(path), format, limit, kwargs))
        k = 5 if limit is None else min(5, limit)
        return Trace.from_arrays(np.arange(k, dtype=float), np.zeros(k), np.arange(k) * 4096,
                                 np.full(k, 4096), name="file")

    monkeypatch.setattr(registry, "_load", fake_load)
    return calls


def test_get_trace_from_a_path_uses_the_readers(tmp_path: Path, fake_readers: list) -> None:
    path = tmp_path / "sample.csv"
    path.write_text("anything\n")
    tr = get_trace(path, format="msr", skip_bad=True)
    assert len(tr) == 5 and fake_readers == [(str(path), "msr", None, {"skip_bad": True})]
    assert len(get_trace(str(path), n=3)) == 3 and fake_readers[-1][2] == 3
    assert len(load_trace(path)) == 5 and fake_readers[-1] == (str(path), None, None, {})
