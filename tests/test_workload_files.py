"""A home-made trace file as an env's workload: a path with the reader's options.

``workload={"path": P, **load_trace options}`` reads a file whose layout no built-in format has (a
CSV with a header row, named columns, its own units) in every HSS env, exactly as
``load_trace(P, **options)`` reads it. Units are never guessed: they are given, or named by the
header; errors name the file (and the line and field where there is one).
"""

from __future__ import annotations

import copy
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import hss_gym
from hss_gym.workloads import load_trace
from hss_gym.workloads.trace import READ, WRITE, TraceFormatError

#: a CSV as a user writes it: a header row, the columns in an order of its own, offsets in sectors
ROWS = "".join(f"{0.25 * i:.2f},{'W' if i % 3 == 0 else 'R'},{8 * (i % 40)},4096\n" for i in range(200))
LAYOUT = {"format": "csv", "columns": {"time": "timestamp", "op": "op", "offset": "lba", "size": "bytes"},
          "time_unit": "ms", "offset_unit": 512}


@pytest.fixture
def home_csv(tmp_path: Path) -> Path:
    path = tmp_path / "my.csv"
    path.write_text("timestamp,op,lba,bytes\n" + ROWS)
    return path


def test_a_home_made_csv_is_an_env_workload(home_csv: Path) -> None:
    spec = {"path": str(home_csv), **LAYOUT}
    env = hss_gym.parallel_env(workload=spec, n_requests=150)
    _, infos = env.reset(seed=0)
    want = load_trace(home_csv, limit=150, **LAYOUT)
    assert len(env.trace) == 150 and np.array_equal(env.trace.offset, want.offset)
    assert env.trace.time_us[:3].tolist() == [0.0, 250.0, 500.0]          # ms -> µs
    assert env.trace.offset[:3].tolist() == [0, 8 * 512, 16 * 512]         # sectors -> bytes
    assert env.trace.op[:2].tolist() == [WRITE, READ] and env.trace.source["options"]["time_unit"] == "ms"
    while env.agents:
        infos = env.step({"placement": 0, "migration": infos["migration"]["device"]})[4]
    twin = copy.deepcopy(env)  # copies re-create the env from its arguments, the dict included
    assert len(env.latencies()) == 150 and np.array_equal(twin.latencies(), env.latencies())


def test_placement_v0_takes_the_same_dict_and_a_trace_window(home_csv: Path) -> None:
    env = gym.make("hss/Placement-v0", workload={"path": home_csv, **LAYOUT}, n_requests=None,
                   trace_window=50)
    env.reset(seed=3)
    inner = env.unwrapped.env
    start, stop = inner.episode_window
    assert stop - start == 50 and len(inner.trace) == 50
    other = home_csv.with_name("other.csv")
    other.write_text("time_us,op,offset_bytes,size_bytes\n" + "".join(f"{7 * i},r,{512 * i},512\n" for i in range(60)))
    env.reset(seed=0, options={"workload": {"path": other, "format": "csv", "columns": {
        "time": "time_us", "op": "op", "offset": "offset_bytes", "size": "size_bytes"}}})
    start = inner.episode_window[0]
    assert inner.trace.source["path"] == str(other) and len(inner.trace) == 50
    assert inner.trace.time_us[:2].tolist() == [7.0 * start, 7.0 * (start + 1)]   # µs, as the header says


@pytest.mark.parametrize("header, units", [
    ("time_us,op,offset_bytes,size_bytes", {}),
    ("Time (ms),Op,Offset [sectors],Size (bytes)", {}),
    ("when,op,where,len", {"time_unit": "ms", "offset_unit": 512, "size_unit": 1}),
])
def test_header_names_state_units_or_options_do(tmp_path: Path, header: str, units: dict) -> None:
    path = tmp_path / "t.csv"
    path.write_text(header + "\n1,R,8,4096\n2,W,16,512\n")
    names = header.split(",")
    trace = load_trace(path, "csv", columns=dict(zip(("time", "op", "offset", "size"), names)), **units)
    scale = {"time_us,op,offset_bytes,size_bytes": (1.0, 1)}.get(header, (1000.0, 512))
    assert trace.time_us.tolist() == [scale[0], 2 * scale[0]]
    assert trace.offset.tolist() == [8 * scale[1], 16 * scale[1]] and trace.size.tolist() == [4096, 512]


@pytest.mark.parametrize("options, error, message", [
    ({"format": "csv"}, ValueError, r"trace reader option\(s\) \['format'\] are no env options.*workload="),
    ({"workload": {"path": "FILE", **LAYOUT, "time_unit": None}}, ValueError,
     r"workload '.*my\.csv': the unit of the time column 'timestamp' is not stated: give time_unit="),
    ({"workload": {"path": "FILE", **LAYOUT, "size_unit": 512}}, ValueError,
     r"size_unit=512 contradicts the size column 'bytes', whose name says 1"),
    ({"workload": {"path": "FILE", **LAYOUT, "formt": "csv"}}, ValueError, r"\['formt'\] \(did you mean 'format'\?\)"),
    ({"workload": {"path": "FILE", **LAYOUT, "limit": 5}}, ValueError, "the request count .n_requests."),
    ({"workload": {**LAYOUT}}, ValueError, "needs 'path'"),
    ({"workload": {"path": "ycsb-b", "skip_bad": True}}, ValueError, "'ycsb-b' is a generated workload"),
    ({"workload": {"path": "missing.csv", **LAYOUT}}, FileNotFoundError, "'missing.csv' does not exist"),
])
def test_misstated_workloads_are_refused_before_any_reset(home_csv: Path, options: dict, error: type,
                                                          message: str) -> None:
    if "workload" in options:
        spec = {k: v for k, v in options["workload"].items() if v is not None}
        options = {"workload": {**spec, "path": str(home_csv)} if spec.get("path") == "FILE" else spec}
    else:
        options = {"workload": str(home_csv), **options}
    with pytest.raises(error, match=message):
        hss_gym.parallel_env(**options)


def test_file_errors_name_the_file_line_and_field(home_csv: Path) -> None:
    wrong = {**LAYOUT, "columns": {**LAYOUT["columns"], "offset": "sector"}}
    with pytest.raises(TraceFormatError, match="not in the header") as info:
        hss_gym.parallel_env(workload={"path": home_csv, **wrong}).reset(seed=0)
    assert info.value.path == str(home_csv) and info.value.line == 1 and info.value.field == "sector"
    home_csv.write_text("timestamp,op,lba,bytes\n0.5,R,8,4096\n0.75,R,eight,4096\n")
    with pytest.raises(TraceFormatError) as info:
        hss_gym.parallel_env(workload={"path": home_csv, **LAYOUT}).reset(seed=0)
    assert (info.value.path, info.value.line, info.value.field) == (str(home_csv), 3, "lba")
    no_header = home_csv.with_name("plain.csv")
    no_header.write_text("0.5,R,8,4096\n")
    with pytest.raises(TraceFormatError, match=r"file .*plain\.csv: the unit of the offset column \(field 3\) "
                                               "is not stated"):
        load_trace(no_header, "csv", columns={"time": 0, "op": 1, "offset": 2, "size": 3}, time_unit="s",
                   size_unit=1)
