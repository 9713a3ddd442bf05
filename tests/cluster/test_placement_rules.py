"""A new placement rule is one module plus one registration: a test-only rule (worst fit: the node with the most free
GPUs), registered here, drives FIFO through ``gpuweave cluster simulate --placement-rule`` and moves its jobs to
other nodes than the default rule would; the default rule named explicitly changes nothing; an unknown name is one
line listing the registered rules."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuweave.cli import app
from gpuweave.cluster.config import parse_config
from gpuweave.cluster.placement import runnable_spread
from gpuweave.cluster.placements import (
    DEFAULT_PLACEMENT,
    PLACEMENTS,
    FreeCapacity,
    PlacementRule,
    make_placement,
    register_placement,
)
from gpuweave.cluster.state import JobState, Placement
from gpuweave.errors import InputError

NAME = "worst-fit"


class WorstFit(PlacementRule):
    """The whole of a new rule: one node with the most free GPUs (lowest index on ties), else the default spread."""

    calls = 0

    def place(
        self, capacity: FreeCapacity, js: JobState, model: str, *, allow_spread: bool = True
    ) -> Placement | None:
        WorstFit.calls += 1
        n = js.job.num_gpus
        nodes = capacity.view.nodes_by_model[model]
        best = max(nodes, key=lambda i: (capacity.free[i], -i))
        if capacity.free[best] >= n:
            return ((best, n),)
        return runnable_spread(capacity, js, model) if allow_spread else None


@pytest.fixture
def worst_fit():
    register_placement(NAME)(WorstFit)
    WorstFit.calls = 0
    yield WorstFit
    PLACEMENTS.unregister(NAME)


def _simulate(tmp_path: Path, name: str, *extra: str) -> tuple[list[dict], dict]:
    out = tmp_path / name
    args = ["cluster", "simulate", "--policy", "fifo", "--jobs", "60", "--rate", "400", "--seed", "3"]
    result = CliRunner().invoke(app, [*args, "--out", str(out), "--json", "--quiet", *extra])
    assert result.exit_code == 0, result.output
    with open(out / "allocations.csv") as fh:
        rows = list(csv.DictReader(fh))
    return rows, json.loads((out / "summary.json").read_text())


def test_a_registered_rule_drives_fifo(tmp_path, worst_fit):
    default_rows, _ = _simulate(tmp_path, "default")
    rows, summary = _simulate(tmp_path, "worst", "--placement-rule", NAME)
    assert worst_fit.calls > 0
    assert summary["config"]["placement_rule"] == NAME
    assert rows != default_rows  # other nodes for some jobs (best fit packs, worst fit spreads the load)
    # Every job still ran on exactly its gang: the book checked the rule's placements like any policy's.
    assert {r["job_id"] for r in rows} == {r["job_id"] for r in default_rows}


def test_the_default_rule_named_changes_nothing(tmp_path):
    unset_rows, unset = _simulate(tmp_path, "unset")
    named_rows, named = _simulate(tmp_path, "named", "--placement-rule", DEFAULT_PLACEMENT)
    assert named_rows == unset_rows
    assert named["metrics"] == unset["metrics"]


def test_an_unknown_rule_is_one_line(tmp_path):
    with pytest.raises(InputError, match="unknown placement rule 'nope' \\(known: packed, .*fgd"):
        parse_config({"policy": "fifo", "placement_rule": "nope"})
    # a task placement makes a shared run (tests/cluster/test_shared_replay.py)
    assert parse_config({"policy": "fifo", "placement_rule": "fgd"}).placement_rule == "fgd"
    with pytest.raises(InputError, match="places tasks on shared GPUs"):
        make_placement("fgd")  # but it is not a gang rule (a live run's)
    with pytest.raises(InputError, match="known: packed"):
        make_placement("nope")
    result = CliRunner().invoke(app, ["cluster", "placements", "--json"])
    assert result.exit_code == 0
    listed = {entry["name"]: entry["places"] for entry in json.loads(result.output)}
    assert listed["packed"] == "gangs" and listed["fgd"] == listed["best-fit"] == "tasks"


def test_an_unset_rule_leaves_the_config_key_as_it_was():
    config = parse_config({"policy": "fifo"})
    assert config.key() == parse_config({"policy": "fifo", "placement_rule": None}).key()
    assert config.key() != parse_config({"policy": "fifo", "placement_rule": "packed"}).key()
