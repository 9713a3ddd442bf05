"""Fuzz the readers no command reaches cheaply on its own (the FIKIT server's profile directory, `--profiles`
tables, ANDREAS cost and profile tables, Hadar's pool and Philly job log, live run configs, summary.json),
in this process: each returns, or raises :class:`~gpuweave.errors.InputError` (one line), nothing else, within
the time bound. Same strategies and example counts as :mod:`tests.fuzz.test_fuzz_cli`."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuweave.errors import InputError
from tests.cli_harness import TIME_BOUND_S
from tests.fuzz.mutate import document_bytes, table_bytes
from tests.fuzz.targets import FUZZ_LIMITS, LIVE, TRACE_HEADER, TRACE_ROWS, gpus_csv_bytes
from tests.fuzz.test_fuzz_cli import COUNTS, _save_counts, examples


def _profile(path: Path) -> Any:
    from gpuweave.kernel.profile import Profile

    return Profile.load(path)


def _profiles(path: Path) -> Any:
    from gpuweave.workload.profiles import load_profiles

    return load_profiles(path)


def _costs(path: Path) -> Any:
    from gpuweave.andreas.catalog import load_costs

    return load_costs(path)


def _epoch_times(path: Path) -> Any:
    from gpuweave.andreas.catalog import load_profile_table

    return load_profile_table(path)


def _pool(path: Path) -> Any:
    from gpuweave.hadar.trace import load_pool

    return load_pool(path)


def _philly_log(path: Path) -> Any:
    from gpuweave.hadar.trace import read_philly_job_log

    return read_philly_job_log(path)


def _live(path: Path) -> Any:
    from gpuweave.live.config import load_live_config

    (path.parent / "t.csv").write_text("\n".join(",".join(r[:5]) for r in [TRACE_HEADER, *TRACE_ROWS]) + "\n")
    return load_live_config(path)


def _gpus_csv(path: Path) -> Any:
    """The report's reader of a fill run's gpus.csv; whatever it accepts is physical."""
    from gpuweave.cluster.sharing.occupancy import read_gpus_csv

    loads, records = read_gpus_csv(path)
    for record in records:
        assert all(0 <= used <= 1000 for used in record.used) and 0 <= record.slot < 1024
        assert len(record.used) == len(record.instances) == len(loads) + 1
    return records


def _summary(path: Path) -> Any:
    from gpuweave.results import read_summary

    return read_summary(path)


PROFILE = {
    "format": "gpuweave.fikit.profile", "version": 1, "task_key": "svc", "runs": 3,
    "kernels": [{"id": "k0|b1,1,1|g1,1,1", "sk": 0.5, "sg": 0.1, "count": 3}, {"id": "k1", "sk": 1.0, "count": 3}],
}  # fmt: skip
PHILLY_LOG = [
    {"jobid": "j1", "submitted_time": "2017-10-03 10:00:00", "attempts": [
        {"start_time": "2017-10-03 10:01:00", "end_time": "2017-10-03 11:00:00", "detail": [{"gpus": ["g0", "g1"]}]}]},
]  # fmt: skip
SUMMARY = {"kind": "mig", "config": {"algo": "far"}, "seed": 0, "version": "0.1.0", "fingerprint": "x",
           "metrics": {"makespan_s": 12.5, "ratio": 1.1, "tasks": 4, "undefined": None}}  # fmt: skip

READERS: list[tuple[str, str, st.SearchStrategy[bytes], Callable[[Path], Any]]] = [
    ("kernel profile JSON (serve --profiles)", "svc.json", document_bytes(PROFILE), _profile),
    ("throughput profiles CSV (--profiles)", "p.csv", table_bytes(
        ["job_type", "gpu_model", "num_gpus", "consolidated", "throughput"],
        [["ResNet-18 (batch size 32)", "V100", "1", "1", "10.5"], ["ResNet-18 (batch size 32)", "K80", "2", "0", "3"]],
    ), _profiles),
    ("ANDREAS costs CSV", "c.csv", table_bytes(
        ["gpu_type", "num_gpus", "cost_eur_per_h"],
        [["TESLA", "1", "0.5"], ["TESLA", "2", "0.9"], ["TURING", "1", "0.3"]],
    ), _costs),
    ("ANDREAS epoch times CSV", "e.csv", table_bytes(
        ["application", "gpu_type", "num_gpus", "time_per_epoch_s"],
        [["LSTMbig", "TESLA", "1", "43.08"], ["LSTMbig", "TURING", "1", "110.7"]],
    ), _epoch_times),
    ("Hadar pool CSV", "pool.csv", table_bytes(
        ["row", "duration_s", "num_gpus", "category"], [["1", "3600", "1", "S"], ["2", "36000", "4", "M"]]
    ), _pool),
    ("Philly cluster_job_log JSON", "log.json", document_bytes(PHILLY_LOG), _philly_log),
    ("live run config YAML", "live.yaml", document_bytes(LIVE, as_yaml=True), _live),
    ("summary.json", "summary.json", document_bytes(SUMMARY), _summary),
    ("fill gpus.csv (report's occupancy picture)", "gpus.csv", gpus_csv_bytes(), _gpus_csv),
]  # fmt: skip


@pytest.mark.parametrize(("name", "file", "strategy", "reader"), READERS, ids=[r[0] for r in READERS])
def test_fuzz_reader(name, file, strategy, reader, request, monkeypatch):
    monkeypatch.setenv("GPUWEAVE_LIMITS", FUZZ_LIMITS)

    @settings(
        max_examples=examples(request.config) * 3,  # in-process: cheap
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(content=strategy)
    def one(content):
        with tempfile.TemporaryDirectory(prefix="gpuweave-fuzz-") as tmp:
            path = Path(tmp) / file
            path.write_bytes(content)
            started = time.process_time()
            try:
                reader(path)
            except InputError as exc:
                assert "\n" not in exc.one_line()
            COUNTS[name] = COUNTS.get(name, 0) + 1
            assert time.process_time() - started < TIME_BOUND_S

    try:
        one()
    finally:
        _save_counts(request.config)


def test_fuzz_documents_reach_what_readers_must_refuse():
    """The strategies do produce NaN and deep nesting, or the suite would prove little."""
    from hypothesis import find

    seed = {"a": [1, {"b": 2}], "c": 3.5}
    assert b"NaN" in find(document_bytes(seed), lambda data: b"NaN" in data)
    deep = find(document_bytes(seed), lambda data: b"[" * 70 in data)
    with pytest.raises(InputError):
        from gpuweave.files import parse_json

        parse_json(deep)
    assert json.loads(b'{"a": 1}') == {"a": 1}
