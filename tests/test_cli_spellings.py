"""Every command spelling answers ``--help``; each old spelling is a hidden alias giving its new one's output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gpuweave.cli import app
from gpuweave.cli.aliases import OLD_TO_NEW
from gpuweave.errors import InputError

runner = CliRunner()
ROOT = typer.main.get_command(app)
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: the spellings the CLI promises (issue 11), besides whatever else each group holds
NEW_SPELLINGS = [
    *(("cluster", c) for c in ("simulate", "plan", "run", "compare", "policies", "list", "show")),
    ("cluster", "plan", "hadar"),
    ("cluster", "plan", "andreas"),
    *(("mig", c) for c in ("plan", "validate", "run", "algos", "generate")),
    *(("packs", c) for c in ("plan", "run", "algos")),
    *(("kernel", c) for c in ("simulate", "profile", "serve", "build-shim", "modes", "import-torch", "bench")),
    *((group,) for group in ("trace", "repro", "sweep", "report", "bench", "demo", "gpus")),
]


def all_spellings(command=ROOT, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path under ``command``, hidden ones included."""
    paths = [prefix] if prefix else []
    for name, sub in getattr(command, "commands", {}).items():
        paths += all_spellings(sub, (*prefix, name))
    return paths


def invoke(*args: str) -> tuple[int, str]:
    """Exit code and output, with InputError turned into one line and exit 2 as ``gpuweave.cli.main`` does."""
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    if isinstance(result.exception, InputError):
        return 2, f"error: {result.exception.one_line()}"
    return result.exit_code, result.output


@pytest.mark.parametrize("path", all_spellings(), ids=" ".join)
def test_every_spelling_has_help(path):
    code, out = invoke(*path, "--help")
    assert code == 0 and "Usage:" in out, out


def test_promised_spellings_and_aliases_exist():
    spellings = set(all_spellings())
    assert set(NEW_SPELLINGS) <= spellings
    assert set(OLD_TO_NEW) | set(OLD_TO_NEW.values()) <= spellings


def test_old_spellings_are_hidden_and_new_ones_listed():
    code, out = invoke("--help")
    listed = {line.strip("│ ").split(" ")[0] for line in out.splitlines() if line.startswith("│ ")}
    assert code == 0
    assert not listed & {"simulate", "policies", "plan", "run", "fikit"}
    assert {"cluster", "mig", "packs", "kernel", "trace", "repro", "sweep", "report", "bench", "demo", "gpus"} <= listed


@pytest.mark.parametrize(("old", "new"), OLD_TO_NEW.items(), ids=lambda path: " ".join(path))
def test_alias_is_the_same_command(old, new):
    """Same function, so the same options and output; only the help listing hides it."""
    old_cmd, new_cmd = ROOT, ROOT
    for name in old:
        old_cmd = old_cmd.commands[name]
    for name in new:
        new_cmd = new_cmd.commands[name]
    assert old_cmd.callback.__wrapped__ is new_cmd.callback.__wrapped__
    assert [p.opts for p in old_cmd.params] == [p.opts for p in new_cmd.params]


def without_timings(text: str) -> str:
    """The output with measured times (``1.04 ms``, ``"decision_seconds": 0.001``) blanked: they differ per run."""
    text = re.sub(r"[0-9.]+ ms\b", "T ms", text)
    return re.sub(r'"decision_seconds": [0-9.e-]+', '"decision_seconds": T', text)


def assert_same_output(old: list[str], new: list[str], expect_code: int = 0) -> str:
    old_code, old_out = invoke(*old)
    new_code, new_out = invoke(*new)
    assert (old_code, without_timings(old_out)) == (new_code, without_timings(new_out))
    assert old_code == expect_code, old_out
    return new_out


def test_cluster_old_and_new_spellings_agree(tmp_path):
    snapshot = str(EXAMPLES / "hadar" / "snapshot.json")
    out = assert_same_output(["plan", "hadar", snapshot, "--json"], ["cluster", "plan", "hadar", snapshot, "--json"])
    assert json.loads(out)["jobs"]
    state = tmp_path / "state.json"
    state.write_text(json.dumps(ANDREAS_STATE))
    out = assert_same_output(["plan", "andreas", str(state)], ["cluster", "plan", "andreas", str(state)])
    assert "f_OBJ" in out
    out = assert_same_output(["policies", "--json"], ["cluster", "policies", "--json"])
    assert "hadar" in {entry["name"] for entry in json.loads(out)}


ANDREAS_STATE = {
    "now": 0,
    "nodes": [{"name": "n0", "gpu": "TESLA", "gpus": 2}],
    "jobs": [{"id": "J1", "application": "efficientNet", "epochs": 10, "submission": 0, "due": 3600, "weight": 1}],
}


def test_mig_old_and_new_spellings_agree(tmp_path):
    tasks = tmp_path / "tasks.csv"
    assert invoke("mig", "generate", str(tasks), "--n", "6", "--seed", "3")[0] == 0
    out = assert_same_output(["plan", "mig", str(tasks)], ["mig", "plan", str(tasks)])
    assert "makespan" in out
    missing = str(tmp_path / "missing.json")
    assert_same_output(["run", "mig", missing], ["mig", "run", missing], expect_code=2)


def test_packs_old_and_new_spellings_agree(tmp_path):
    profile = tmp_path / "profile.csv"
    profile.write_text("task,1,2,3,4\nT1,12,6,4,3\nT2,8,5,4,4\nT3,3,2,2,2\n")
    out = assert_same_output(["plan", "packs", str(profile)], ["packs", "plan", str(profile)])
    assert "relative cost" in out
    missing = str(tmp_path / "missing.json")
    assert_same_output(["run", "packs", missing], ["packs", "run", missing], expect_code=2)


def test_kernel_old_and_new_spellings_agree():
    out = assert_same_output(["fikit", "serve", "--port", "70000"], ["kernel", "serve", "--port", "70000"], 2)
    assert "port must be 1-65535" in out


@pytest.mark.parametrize(
    ("group", "name"), [("cluster", "policies"), ("mig", "algos"), ("packs", "algos"), ("kernel", "modes")]
)
def test_registry_listings_as_table_and_json(group, name):
    code, table = invoke(group, name)
    assert code == 0
    code, text = invoke(group, name, "--json")
    entries = json.loads(text)
    assert code == 0 and entries and all(entry["name"] in table for entry in entries)
