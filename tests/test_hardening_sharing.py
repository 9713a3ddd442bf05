"""Hostile and careless input to what GPU sharing added (issue 39: more cases of each class): the ``mig_profile``
column of pod lists and traces, a fill run's ``gpus.csv`` read back by ``gpuweave report``, the cluster spec's
``currency`` and openb node lists. Each case was a traceback, a hang, a silent wrong answer or the same file read
two ways before its fix; each is now one ``error:`` line naming the file, row and field, exit 2, nothing written
(docs/hardening.md)."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from gpuweave.cluster.sharing import occupancy
from gpuweave.cluster.sharing.occupancy import mig_used_milli, read_gpus_csv, read_instance_labels
from gpuweave.errors import InputError
from gpuweave.hardware.catalog import get_gpu
from gpuweave.hardware.cluster_spec import load_cluster
from gpuweave.hardware.mig_profiles import parse_mig_profile
from gpuweave.limits import ENV, LimitError
from gpuweave.report import sharing as report_sharing
from gpuweave.report.grains import GrainRun
from gpuweave.workload.traces.alibaba import read_openb_pods
from gpuweave.workload.traces.openb import read_openb_node_table, read_openb_tasks
from tests.test_cli_bad_input import check_one_error, gpuweave

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,mig_profile\n"
TIMED_PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
TIMED_PODS += "scheduled_time,mig_profile\n"


# --------------------------------------------------------------------------- mig_profile: spellings
@pytest.mark.parametrize(
    "text", ["\u0663g.20gb", "\uff13g.\uff12\uff10gb", "01g.5gb", "3g.020gb", "00g.5gb", "3g.05gb"]
)
def test_profile_numbers_are_ascii_without_leading_zeros(text: str):
    """Before: ``\\d`` took Arabic-Indic and full-width digits and leading zeros, and the name kept them: "٣g.20gb"
    and "01g.05gb" were refused as profiles no GPU of the catalog has, listing every model's profiles."""
    with pytest.raises(InputError, match="malformed MIG profile") as raised:
        parse_mig_profile(text, file="p.csv", row=3)
    assert (raised.value.row, raised.value.field) == (3, "mig_profile")


@pytest.mark.parametrize("text", ["3G.20GB", " 3g.20gb\t", "MIG  3g.20gb", "mig-3g.20gb", "NVIDIA.COM/MIG-3G.20GB"])
def test_profile_spellings_nvidia_writes_are_one_name(text: str):
    assert parse_mig_profile(text).name == "3g.20gb"


def test_profile_with_unicode_digits_is_one_line_through_validate(tmp_path: Path):
    trace = tmp_path / "t.csv"
    trace.write_text(
        "job_id,arrival,num_gpus,job_type,duration,mig_profile\na,0,1,ResNet-18 (batch size 32),60,\u0663g.20gb\n",
        encoding="utf-8",
    )
    check_one_error(gpuweave("trace", "validate", trace), "row 1", "field 'mig_profile'", "malformed")


# --------------------------------------------------------------------------- mig_profile: both pod readers alike
def _timed_pods(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "pods.csv"
    path.write_text(TIMED_PODS + "".join(f"{row}\n" for row in rows))
    return path


def test_alibaba_pods_fill_an_empty_share_from_the_profile_as_fill_does(tmp_path: Path):
    """Before: ``trace info/convert --format alibaba-pods`` refused the empty gpu_milli of a profile's pod that
    ``cluster fill`` reads as the profile's share (one file, two answers)."""
    path = _timed_pods(
        tmp_path,
        "p0,12000,16384,1,1000,,LS,Running,0,12537,0,",
        "p1,6000,12288,1,,,LS,Succeeded,4270,12902,4270, MIG 3G.20GB",
    )
    assert read_openb_tasks(path).gpu_milli.tolist() == [1000, 428]
    frame = read_openb_pods(path)
    assert frame["gpu_milli"].tolist() == [1000, 428]
    assert frame["mig_profile"].fillna("").tolist() == ["", "3g.20gb"]  # canonical spelling
    out = tmp_path / "o.csv"
    r = gpuweave("trace", "convert", path, out, "--format", "alibaba-pods")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(out.open()))
    assert [(row["gpu_milli"], row["mig_profile"]) for row in rows] == [("1000", ""), ("428", "3g.20gb")]
    assert gpuweave("trace", "validate", out).returncode == 0


def test_alibaba_pods_refuse_a_profile_on_a_pod_they_drop(tmp_path: Path):
    """Before: a CPU-only pod naming a profile was dropped as CPU-only before the schema saw its profile, so
    ``trace info`` accepted the file that ``cluster fill`` refuses."""
    path = _timed_pods(
        tmp_path, "p0,1000,1024,1,1000,,LS,Running,0,100,0,", "p1,1000,1024,0,0,,LS,Running,0,100,0,1g.5gb"
    )
    for command in (
        ("trace", "info", path, "--format", "alibaba-pods"),
        ("cluster", "fill", "--nodes", _nodes(tmp_path), "--pods", path, "--out", tmp_path / "run"),
    ):
        check_one_error(gpuweave(*command), "row 2", "field 'num_gpu'", "one GPU")
    assert not (tmp_path / "run").exists()


def _nodes(tmp_path: Path, gpus: int = 8) -> Path:
    path = tmp_path / "nodes.csv"
    path.write_text(f"sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,{gpus},V100M16\n")
    return path


# --------------------------------------------------------------------------- openb node lists
def test_openb_node_list_node_wider_than_a_cluster_spec_node_is_refused(tmp_path: Path):
    """Before: a node of 100,000 GPUs was read, and FGD's placement (O(GPUs^2) per node) took all memory."""
    read_openb_node_table(_nodes(tmp_path, 1024))
    with pytest.raises(InputError, match="<= 1024") as raised:
        read_openb_node_table(_nodes(tmp_path, 100_000))
    assert (raised.value.row, raised.value.field) == (1, "gpu")


# --------------------------------------------------------------------------- gpus.csv read back
@pytest.fixture(scope="module")
def mig_run(tmp_path_factory) -> Path:
    """A real fill run on MIG A100s and fractions of H100s: the gpus.csv every damage starts from."""
    root = tmp_path_factory.mktemp("fill")
    spec = root / "c.yaml"
    spec.write_text(
        "name: c\nnodes:\n"
        "  - {count: 2, gpu: A100, gpus_per_node: 4, cpu_milli: 64000, memory_mib: 262144, sharing: mig}\n"
        "  - {count: 1, gpu: H100, gpus_per_node: 8, cpu_milli: 64000, memory_mib: 262144}\n"
    )
    pods = root / "pods.csv"
    rows = [f"p{i},2000,4096,1,{('', '', '460')[i % 3]},,{('3g.20gb', '2g.10gb', '')[i % 3]}" for i in range(9)]
    pods.write_text(POD_HEADER + "\n".join(rows) + "\n")
    out = root / "run"
    r = gpuweave("cluster", "fill", "--cluster", spec, "--pods", pods, "--out", out, "-q")
    assert r.returncode == 0, r.stderr
    return out


def _damaged(mig_run: Path, tmp_path: Path, change) -> Path:
    run = tmp_path / "run"
    shutil.copytree(mig_run, run)
    with (run / "gpus.csv").open(newline="") as handle:
        header, *rows = list(csv.reader(handle))
    change(header, rows)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([header, *rows])
    (run / "gpus.csv").write_text(buffer.getvalue())
    return run


def _cell(column: str, value: str, row: int = 0):
    def change(header, rows):
        rows[row][header.index(column)] = value

    return change


def _first_mig_row(header, rows, column="mig_instances") -> int:
    return next(i for i, r in enumerate(rows) if r[header.index(column)])


def _on_mig_gpu(column: str, value: str):
    def change(header, rows):
        rows[_first_mig_row(header, rows)][header.index(column)] = value

    return change


def _rename(old: str, new: str):
    def change(header, rows):
        header[header.index(old)] = new

    return change


def _drop(column: str):
    def change(header, rows):
        i = header.index(column)
        for line in [header, *rows]:
            del line[i]

    return change


def _append(row_of):
    def change(header, rows):
        rows.append(row_of(header, rows))

    return change


DAMAGE = {
    # malformed or impossible instance cells
    "overlap": (_on_mig_gpu("mig_instances", "3@0+3@0"), "mig_instances", "overlap"),
    "overlap of sizes": (_on_mig_gpu("mig_instances", "7@0+1@0"), "mig_instances", "overlap"),
    "overlap 3@4 and 1@6": (_on_mig_gpu("mig_instances", "3@0+3@4+1@6"), "mig_instances", "overlap"),
    "3@": (_on_mig_gpu("mig_instances", "3@"), "mig_instances", "size@start"),
    "@2": (_on_mig_gpu("mig_instances", "@2"), "mig_instances", "size@start"),
    "9@9": (_on_mig_gpu("mig_instances", "9@9"), "mig_instances", "no MIG instance of size 9"),
    "unicode digit": (_on_mig_gpu("mig_instances", "\u0663@0"), "mig_instances", "size@start"),
    "leading zeros": (_on_mig_gpu("mig_instances", "03@00"), "mig_instances", "size@start"),
    "5000 digits": (_on_mig_gpu("mig_instances", "1@" + "9" * 5000), "mig_instances", "size@start"),
    "20000 instances": (_on_mig_gpu("mig_instances", "+".join(["1@0"] * 20000)), "mig_instances", "20,000 MIG"),
    # used milli-GPUs and slices that are not the instances'
    "used not the instances'": (_on_mig_gpu("used_milli", "0"), "used_milli", "uses"),
    "slices not the model's": (_on_mig_gpu("mig_slices", "3"), "mig_slices", "has 7 MIG slices"),
    "unknown model": (_on_mig_gpu("model", "nonesuch"), "model", "unknown GPU model"),
    # GPU indices and nodes
    "GPU index 1024": (_cell("gpu", "1024"), "gpu", "from 0 to 1,023"),
    "GPU index 5.5": (_cell("gpu", "5.5"), "gpu", "whole number"),
    "GPU index -1": (_cell("gpu", "-1"), "gpu", "from 0 to 1,023"),
    "GPU twice": (_append(lambda header, rows: list(rows[0])), "gpu", "appears twice"),
    "node of two models": (
        _append(lambda header, rows: [rows[0][0], "T4", "99", *rows[0][3:]]),
        "model",
        "two models",
    ),
    # columns
    "suffix ²": (_rename("used_milli_at_50", "used_milli_at_\u00b2"), "used_milli_at_\u00b2", "reported load"),
    "suffix ٥٠": (_rename("used_milli_at_50", "used_milli_at_\u0665\u0660"), "used_milli_at_", "reported load"),
    "suffix 050": (_rename("used_milli_at_50", "used_milli_at_050"), "used_milli_at_050", "reported load"),
    "suffix 999": (_rename("used_milli_at_50", "used_milli_at_999"), "used_milli_at_999", "reported load"),
    "load skipped": (_drop("used_milli_at_80"), "used_milli_at_80", "missing column"),
    "instances of a load dropped": (_drop("mig_instances_at_50"), "mig_instances_at_50", "missing column"),
    "instances dropped on a MIG run": (_drop("mig_instances"), "mig_instances", "missing column"),
    "header only": (lambda header, rows: rows.clear(), "node", "no GPU"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_gpus_csv_is_one_line_with_its_row_and_column(mig_run: Path, tmp_path: Path, case: str):
    """Before: a traceback (``used_milli_at_²``, a 5000-digit start, a header alone, ``used_milli_at_050``), or a
    picture drawn of overlapping instances, instances the used share contradicts, a slot -1 or twice, a load
    skipped, MIG slices of another model."""
    change, field, needle = DAMAGE[case]
    run = _damaged(mig_run, tmp_path, change)
    with pytest.raises(InputError) as raised:
        read_gpus_csv(run / "gpus.csv")
    error = raised.value
    assert needle in error.message and (error.field or "").startswith(field), (error.message, error.field)
    assert "gpus.csv" in str(error.file) and error.row is not None


@pytest.mark.parametrize("case", ["overlap", "suffix ²", "header only"])
def test_damaged_gpus_csv_through_report_writes_nothing(mig_run: Path, tmp_path: Path, case: str):
    change, field, needle = DAMAGE[case]
    run = _damaged(mig_run, tmp_path, change)
    out = tmp_path / "report"
    check_one_error(gpuweave("report", run, "--out", out), "gpus.csv", f"field '{field}", needle)
    assert not out.exists()


def test_the_written_gpus_csv_reads_back_and_its_mig_gpus_agree(mig_run: Path):
    loads, records = read_gpus_csv(mig_run / "gpus.csv")
    assert loads == list(occupancy.REPORTED_LOADS[: len(loads)])
    mig = [r for r in records if r.slices]
    assert mig and all(r.used[-1] == mig_used_milli(r.instances[-1], r.slices) for r in mig)
    # the reader is the inverse of the writer's cell
    geometry = get_gpu("A100").mig
    assert geometry is not None
    placements = (geometry.placement(4, 0), geometry.placement(2, 4))
    assert read_instance_labels(occupancy.instance_labels(placements), "A100") == placements


def test_gpus_csv_rows_are_counted_against_cluster_gpus(mig_run: Path, monkeypatch):
    """Before: 10^6 rows (125,000 nodes) were read into dicts (2 GB) and drawn for over two minutes."""
    monkeypatch.setenv(ENV, "cluster_gpus=10")
    with pytest.raises(LimitError, match="cluster_gpus") as raised:
        read_gpus_csv(mig_run / "gpus.csv")
    assert raised.value.row == 11


def test_picture_legend_reads_the_widest_node_once(mig_run: Path, tmp_path: Path, monkeypatch):
    """Before: the legend asked for the widest node once per node (O(nodes^2)): 12,500 nodes took 33 s there."""
    header = "node,model,gpu,used_milli,mig_instances,mig_slices\n"
    run = _damaged(mig_run, tmp_path, lambda h, rows: None)
    (run / "gpus.csv").write_text(
        header + "".join(f"n{i},T4,{g},{(i * 37 + g) % 1001},,\n" for i in range(300) for g in range(2))
    )
    calls = []
    width = report_sharing._Picture.width

    def counted(self):
        calls.append(1)
        return width.fget(self)

    monkeypatch.setattr(report_sharing._Picture, "width", property(counted))
    report_sharing.occupancy_figure(
        GrainRun(run, json.loads((run / "summary.json").read_text()), "run"), tmp_path / "p.png"
    )
    assert 0 < len(calls) < 30  # a few per figure, not one per node


# --------------------------------------------------------------------------- currency
@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ('"\\u202e"', "U+202E"),  # right-to-left override: every cost's digits shown reversed
        ('"\\u200b"', "U+200B"),  # zero-width space: an invisible currency
        ('"\\ufeff"', "U+FEFF"),
        ('"$\\u061c"', "U+061C"),
        ('"\\uffff"', "U+FFFF"),
        ('"EUR\\n"', "U+000A"),
        ("!!binary aGVsbG8=", "expected text"),
        ('"12345678"', "1 to 7 visible characters"),
    ],
)
def test_currency_of_invisible_or_reordering_characters_is_refused(tmp_path: Path, value: str, needle: str):
    path = tmp_path / "c.yaml"
    path.write_text(f"name: c\ncurrency: {value}\nnodes:\n  - {{count: 1, gpu: V100, gpus_per_node: 4}}\n")
    with pytest.raises(InputError, match="currency symbol or code|expected text") as raised:
        load_cluster(path)
    assert raised.value.field == "currency" and needle in raised.value.message


def test_currency_through_serve_is_refused_before_the_database(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text('name: c\ncurrency: "\\u202e"\nnodes:\n  - {count: 1, gpu: V100, gpus_per_node: 4}\n')
    r = gpuweave("serve", "--cluster", path, "--db", "sqlite:///no-such-folder/x.db", "--data-dir", tmp_path / "d")
    check_one_error(r, "field 'currency'", "U+202E")


@pytest.mark.parametrize("value", ["$", "€", "EUR", "CHF ", "e\u0301", "Fr."])
def test_visible_currencies_still_load(tmp_path: Path, value: str):
    path = tmp_path / "c.yaml"
    path.write_text(f'name: c\ncurrency: "{value}"\nnodes:\n  - {{count: 1, gpu: V100, gpus_per_node: 4}}\n')
    assert load_cluster(path).currency == value
