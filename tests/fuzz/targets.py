"""The fuzz targets: every reader reached through the CLI command that reads it, with a valid seed input each.

A :class:`Target` writes its (mutated) input files into a fresh directory and returns the command line. Seeds are
small valid inputs; the strategies of :mod:`tests.fuzz.mutate` damage them. Option-value targets draw hostile
values for the numeric options of the commands that size work.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from hypothesis import strategies as st

from tests.fuzz.mutate import HOSTILE_CELLS, damaged_bytes, document_bytes, table_bytes

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RESNET = "ResNet-18 (batch size 32)"

#: the limits every fuzzed command runs under: small enough that whatever they accept finishes in seconds, so a
#: command past the time bound is a bug (a missing check), not legitimately large work
FUZZ_LIMITS = (
    "trace_jobs=2000,sweep_cells=6,mig_tasks=300,mig_gpus=16,mig_task_gpus=1200,packs_tasks=300,packs_procs=64,"
    "matching_tasks=40,andreas_jobs=200,andreas_exact_jobs=6,hadar_jobs=300,hadar_exact_jobs=40,"
    "kernel_launches=50000,trace_kernels=20000,reps=2,cluster_gpus=5000,input_mb=16,yaml_mb=1,yaml_nodes=100000"
)


@dataclass(frozen=True)
class Target:
    """``files``: name -> strategy of the file's bytes; ``argv``: the command line (file names relative)."""

    name: str
    files: dict[str, st.SearchStrategy[bytes]]
    argv: list[str] | Callable[[st.DataObject], list[str]]


# ------------------------------------------------------------------ seeds
TRACE_HEADER = ["job_id", "arrival", "num_gpus", "job_type", "duration", "priority", "deadline"]
TRACE_ROWS = [
    ["a", "0", "1", RESNET, "600", "1", ""],
    ["b", "30", "2", "ResNet-50 (batch size 64)", "900", "2", "5000"],
    ["c", "60", "4", "A3C", "300", "", ""],
    ["d", "90", "1", "CycleGAN", "1200", "1", ""],
]
PHILLY = (
    ["timestamp", "duration", "num_gpus", "gpu_time", "cluster"],
    [
        ["2017-10-09 07:01:55", "66.0", "1", "66.0", "11cb48"],
        ["2017-10-09 06:13:03", "2951.0", "2", "5902", "6214e9"],
        ["2017-10-09 08:13:03", "300.0", "4", "1200", "6214e9"],
    ],
)
HELIOS = (
    ["job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time", "start_time", "end_time"]
    + ["duration", "queue"],
    [
        ["2001", "uA", "vcX", "1", "4", "1", "COMPLETED", "2020-07-01 10:00:00", "2020-07-01 10:00:05"]
        + ["2020-07-01 11:00:05", "3600", "5"],
        ["2002", "uB", "vcX", "0", "8", "1", "FAILED", "2020-07-01 09:00:00", "2020-07-01 09:00:00"]
        + ["2020-07-01 09:05:00", "300", "0"],
        ["2003", "uA", "vcY", "4", "16", "1", "CANCELLED", "2020-07-01 10:02:00", "2020-07-01 10:12:00"]
        + ["2020-07-01 14:12:00", "14400", "600"],
    ],
)
PAI_TASKS = (
    ["job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem", "plan_gpu"]
    + ["gpu_type"],
    [
        ["jobA", "worker", "2.0", "Terminated", "1000.0", "4600.0", "600.0", "29.3", "100.0", "V100M32"],
        ["jobA", "ps", "1.0", "Terminated", "1000.0", "4600.0", "400.0", "10.0", "", ""],
        ["jobB", "tensorflow", "1.0", "Failed", "2000.0", "2600.0", "400.0", "8.0", "50.0", "T4"],
        ["jobC", "worker", "1.0", "Waiting", "", "", "600.0", "8.0", "100.0", ""],
    ],
)
PAI_JOBS = (
    ["job_name", "inst_id", "user", "status", "start_time", "end_time"],
    [["jobA", "i1", "u1", "Terminated", "900.0", "4600.0"], ["jobB", "i2", "u2", "Failed", "1500.0", "2600.0"]],
)
PAI_MACHINES = (
    ["machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"],
    [["m1", "T4", "96", "512", "2"], ["m2", "V100M32", "96", "384", "8"], ["m3", "CPU", "96", "512", "0"]],
)
HELIOS_VCS = (["date", "vcA", "vcB", "total"], [["2020-05-01", "16", "8", "24"], ["2020-05-02", "24", "0", "24"]])
TIRESIAS = (
    ["job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"],
    [
        ["0", "1", "0", "606", "vgg19", "164", "30"],
        ["1", "8", "30", "133", "vgg11", "147", "23"],
        ["2", "2", "53", "1000", "resnet50", "600", "10"],
    ],
)
PODS = (
    [
        "name",
        "cpu_milli",
        "memory_mib",
        "num_gpu",
        "gpu_milli",
        "gpu_spec",
        "qos",
        "pod_phase",
        "creation_time",
        "deletion_time",
        "scheduled_time",
    ],
    [
        ["openb-pod-0000", "12000", "16384", "1", "1000", "", "LS", "Running", "0", "12537", "0"],
        ["openb-pod-0001", "6000", "12288", "2", "460", "", "LS", "Running", "4270", "12902", "4270"],
    ],
)
SPOT_JOBS = (
    [
        "job_name",
        "organization",
        "gpu_model",
        "cpu_request",
        "gpu_request",
        "worker_num",
        "submit_time",
        "duration",
        "job_type",
    ],
    [
        ["239255", "13", "A10", "20", "1", "1", "0", "2764", "HP"],
        ["437261", "57", "A100-SXM4-80GB", "15", "1", "4", "9589", "7171", "Spot"],
    ],
)
OPENB_NODES = (
    ["sn", "cpu_milli", "memory_mib", "gpu", "model"],
    [
        ["openb-node-0000", "64000", "262144", "2", "P100"],
        ["openb-node-0001", "64000", "262144", "8", "V100M16"],
        ["openb-node-0002", "96000", "262144", "0", ""],
    ],
)
FILL_PODS = (
    ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"],
    [
        ["p0", "4000", "8192", "1", "460", ""],
        ["p1", "8000", "16384", "2", "1000", "V100M16"],
        ["p2", "1000", "1024", "0", "0", ""],
        ["p3", "2000", "4096", "1", "250", "P100|V100M16"],
    ],
)
#: a hand-made pod list naming MIG profiles (``mig_profile``, not in openb's files): empty shares filled from the
#: profile, a share that agrees, a plain fraction and a whole GPU beside them
MIG_PODS = (
    ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "mig_profile"],
    [
        ["m0", "4000", "8192", "1", "", "", "3g.20gb"],
        ["m1", "2000", "4096", "1", "142", "", "1g.5gb"],
        ["m2", "4000", "8192", "1", "", "H100-80GB", "3g.40gb"],
        ["m3", "1000", "2048", "1", "460", "", ""],
        ["m4", "8000", "16384", "1", "", "A100-40GB", "7g.40gb"],
        ["m5", "8000", "16384", "2", "1000", "", ""],
    ],
)
#: profile cells users write: NVIDIA's, nvidia-smi's and Kubernetes' spellings, other models' and unmodelled
#: profiles, media extensions, unicode digits, leading zeros, huge numbers, two profiles in one cell
MIG_PROFILE_CELLS = [
    "3g.20gb",
    "3G.20GB",
    " MIG 3g.20gb ",
    "MIG\t1g.5gb",
    "nvidia.com/mig-2g.10gb",
    "mig-4g.20gb",
    "7g.80gb",
    "4g.24gb",
    "1g.10gb",
    "1g.5gb+me",
    "7g.40gb-me.all",
    "0g.0gb",
    "99g.5gb",
    "\u0663g.20gb",
    "\uff13g.20gb",
    "01g.05gb",
    "3g.20gb|4g.20gb",
    "3g.20gb,1g.5gb",
    "3g." + "9" * 40 + "gb",
    "9" * 5000 + "g.5gb",
    "nan",
    " ",
    "",
]
MIG_SHARES = ["", "428", "427", "429", "430", "0", "1000", "571", "142", "nan", "-428", "1e300"]
#: a cluster of MIG nodes (A100, ``sharing: mig``) and H100s that run MIG only under ``--sharing mig``; costs in €
MIG_CLUSTER = {
    "name": "mig",
    "currency": "€",
    "price_per_kwh": 0.3,
    "nodes": [
        {"count": 2, "gpu": "A100", "gpus_per_node": 4, "cpu_milli": 64000, "memory_mib": 262144, "sharing": "mig"},
        {"count": 1, "gpu": "H100", "gpus_per_node": 8, "cpu_milli": 64000, "memory_mib": 262144},
    ],
}


@st.composite
def _mig_pods(draw) -> bytes:
    """MIG_PODS with hostile profile cells, shares and GPU counts on some rows, then the table mutations."""
    header, seed = MIG_PODS
    rows = [list(row) for row in seed]
    for row in rows:
        if draw(st.integers(0, 2)) == 0:
            row[6] = draw(st.sampled_from(MIG_PROFILE_CELLS), label="mig_profile")
        if draw(st.integers(0, 3)) == 0:
            row[4] = draw(st.sampled_from(MIG_SHARES), label="gpu_milli")
        if draw(st.integers(0, 5)) == 0:
            row[3] = draw(st.sampled_from(["0", "2", "8", ""]), label="num_gpu")
    return draw(table_bytes(header, rows))


OPENB_TIMES = ["qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"]


@st.composite
def _mig_timed_pods(draw) -> bytes:
    """The MIG pod list with openb's times, as ``trace --format alibaba-pods`` reads it, damaged like _mig_pods."""
    header, seed = MIG_PODS
    rows = [[*row, "LS", "Running", str(60 * i), str(60 * i + 600), str(60 * i)] for i, row in enumerate(seed)]
    for row in rows:
        if draw(st.integers(0, 2)) == 0:
            row[6] = draw(st.sampled_from(MIG_PROFILE_CELLS), label="mig_profile")
        if draw(st.integers(0, 3)) == 0:
            row[4] = draw(st.sampled_from(MIG_SHARES), label="gpu_milli")
    return draw(table_bytes([*header, *OPENB_TIMES], rows))


def _mig_fill_argv(data: st.DataObject) -> list[str]:
    """``cluster fill`` of the MIG pod list on the MIG cluster under one sharing mode, the report sometimes too (it
    reads gpus.csv, MIG instances included, back)."""
    sharing = data.draw(st.sampled_from(["mig", "fraction", "whole"]), label="sharing")
    argv = ["cluster", "fill", "--cluster", "c.yaml", "--pods", "pods.csv", "--sharing", sharing, "--out", "run", "-q"]
    return argv + (["--report"] if data.draw(st.booleans(), label="report") else [])


#: a fill run's gpus.csv (results.write_gpus_csv): MIG A100s with instances at each reported load, H100 fractions
GPUS_CSV = (
    ["node", "model", "gpu", "used_milli", "mig_instances", "mig_slices", "used_milli_at_50", "used_milli_at_80"]
    + ["mig_instances_at_50", "mig_instances_at_80"],
    [
        ["a0", "A100-40GB", "0", "857", "3@0+3@4", "7", "429", "857", "3@4", "3@0+3@4"],
        ["a0", "A100-40GB", "1", "1000", "7@0", "7", "0", "1000", "", "7@0"],
        ["a0", "A100-40GB", "2", "714", "1@0+1@1+3@4", "7", "0", "0", "", ""],
        ["h0", "H100-80GB", "0", "460", "", "", "0", "460", "", ""],
        ["h0", "H100-80GB", "1", "1000", "", "", "1000", "1000", "", ""],
    ],
)
#: cells of instances a damaged or hand-edited gpus.csv holds: malformed, impossible, overlapping, huge
INSTANCE_CELLS = ["3@", "@2", "9@9", "3@0+3@0", "7@0+1@0", "3@0+3@4+1@6", "\u0663@0", "03@00", "+", "1@" + "9" * 5000]
INSTANCE_CELLS += ["+".join(["1@0"] * 20000), "4@0+3@4", "2@0+2@2+3@4", "1@0+1@1+1@2+1@3+1@4+1@5+1@6", "3@1"]


@st.composite
def gpus_csv_bytes(draw) -> bytes:
    """GPUS_CSV with hostile instance cells, GPU indices and load columns, then the table mutations."""
    header, seed = GPUS_CSV
    header, rows = list(header), [list(row) for row in seed]
    for row in rows:
        if draw(st.integers(0, 2)) == 0:
            column = draw(st.sampled_from([4, 8, 9]))
            row[column] = draw(st.sampled_from(INSTANCE_CELLS), label="instances")
        if draw(st.integers(0, 5)) == 0:
            row[2] = draw(st.sampled_from(["0", "1023", "1024", "-1", "5.5", "1e9"]), label="gpu")
    if draw(st.integers(0, 4)) == 0:
        suffix = draw(st.sampled_from(["050", "\u0665\u0660", "\u00b2", "999", "", "-5", "90"]), label="load")
        prefix = draw(st.sampled_from(["used_milli_at_", "mig_instances_at_"]), label="prefix")
        header[draw(st.sampled_from([6, 8]))] = prefix + suffix
    return draw(table_bytes(header, rows))


SPOT_NODES = (
    ["gpu_model", "gpu_capacity_num", "cpu_num", "node_name"],
    [["A10", "4", "192", "0"], ["A100-SXM4-80GB", "8", "192", "1"]],
)
GAVEL = [
    [
        "ResNet-50 (batch size 64)",
        "python3 main.py",
        "image_classification/imagenet",
        "--num_minibatches",
        "1",
        "2931",
        "1",
        "1",
        "-1.000000",
        "0",
    ],
    [
        "Transformer (batch size 16)",
        "python3 train.py",
        "translation",
        "-step",
        "1",
        "11005",
        "2",
        "1",
        "-1.000000",
        "30",
    ],
]
POLLUX = (
    ["name", "time", "application", "num_replicas", "batch_size"],
    [["cifar10-0", "107", "cifar10", "6", "2048"], ["deepspeech2-1", "110", "deepspeech2", "6", "320"]],
)
MIG_TASKS = (
    ["task", "1", "2", "3", "4", "7", "command"],
    [
        ["A", "10", "6", "5", "4", "3", "echo a"],
        ["B", "8", "5", "4", "3", "2", "echo b"],
        ["C", "inf", "9", "7", "6", "4", "echo c"],
        ["D", "12", "7", "5", "4", "3", "echo d"],
    ],
)
PACKS = (
    ["task", "1", "2", "3", "4"],
    [
        ["big", "40", "22", "16", "13"],
        ["mid", "20", "11", "8", "7"],
        ["s1", "6", "4", "3", "3"],
        ["s2", "5", "3", "3", "2"],
        ["s3", "9", "5", "4", "4"],
    ],
)
SCHEDULE = {
    "gpu": "A100",
    "gpus": 1,
    "makespan": 12.61,
    "lower_bound": 10.36,
    "algo": "far",
    "reconfiguration": "table",
    "tasks": [
        {"task": "A", "gpu_index": 0, "size": 4, "start_slice": 0, "start": 0.21, "end": 4.21, "command": "echo a"},
        {"task": "B", "gpu_index": 0, "size": 3, "start_slice": 4, "start": 0.21, "end": 4.21, "command": "echo b"},
    ],
    "operations": [
        {"op": "create", "gpu_index": 0, "size": 4, "start_slice": 0, "start": 0.0, "end": 0.21},
        {"op": "create", "gpu_index": 0, "size": 3, "start_slice": 4, "start": 0.0, "end": 0.21},
        {"op": "destroy", "gpu_index": 0, "size": 4, "start_slice": 0, "start": 4.21, "end": 4.42},
        {"op": "destroy", "gpu_index": 0, "size": 3, "start_slice": 4, "start": 4.21, "end": 4.42},
    ],
}
PLAN = {
    "procs": 4,
    "k": 4,
    "algo": "pack-by-pack-9",
    "cost": 30.0,
    "packs": [
        {
            "cost": 20.0,
            "start": 0.0,
            "tasks": [{"task": "a", "procs": 2, "time": 20.0}, {"task": "b", "procs": 2, "time": 12.0}],
        },
        {"cost": 10.0, "start": 20.0, "tasks": [{"task": "c", "procs": 4, "time": 10.0, "command": "echo {task}"}]},
    ],
}
ANDREAS = {
    "now": 1200,
    "period": 300,
    "nodes": [
        {"name": "armida-05", "gpu": "TESLA", "gpus": 1},
        {"name": "armida-06", "gpu": "TESLA", "gpus": 2},
        {"name": "armida-07", "gpu": "TURING", "gpus": 1},
    ],
    "jobs": [
        {
            "id": "J6",
            "application": "efficientNet",
            "epochs": 80,
            "remaining_epochs": 50.9,
            "submission": 0,
            "due": 3600,
            "due_relative": True,
            "weight": 4,
            "running": {"node": "armida-06", "gpus": 2},
        },
        {
            "id": "J9",
            "application": "convolutionNet",
            "epochs": 160,
            "submission": 1200,
            "due": 2600,
            "due_relative": True,
            "weight": 2,
        },
    ],
}
HADAR = json.loads((EXAMPLES / "hadar" / "snapshot.json").read_text())
KERNEL_CONFIG = {
    "mode": "fikit",
    "quantum_ms": 2.0,
    "seed": 0,
    "stop_when": ["A"],
    "services": [
        {"name": "A", "trace": "canonical:HI", "priority": 0, "workload": {"kind": "back_to_back", "n": 3}},
        {"name": "B", "trace": "trace.json", "priority": 1, "workload": {"kind": "back_to_back", "n": None}},
    ],
}
KERNEL_TRACE = {
    "format": "gpuweave.kernel.trace",
    "version": 1,
    "name": "t",
    "kernels": [
        {"id": f"k{i}|b32,1,1|g4,1,1", "dur": 0.2 + 0.1 * i, "cpu_before": 0.05, "sync_after": i == 3} for i in range(4)
    ],
}
CHROME = {
    "traceEvents": [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "ts": 100 + 50 * i,
            "dur": 5,
            "args": {"correlation": i},
        }
        for i in range(3)
    ]
    + [
        {
            "ph": "X",
            "cat": "kernel",
            "name": f"void k{i}<float>(float*)",
            "ts": 110 + 50 * i,
            "dur": 20,
            "args": {"correlation": i, "grid": [4, 1, 1], "block": [128, 1, 1]},
        }
        for i in range(3)
    ]
    + [{"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "ts": 260, "dur": 30, "args": {}}],
}
RUN_CONFIG = {
    "policy": "fifo",
    "cluster": "gavel-60",
    "jobs": 20,
    "rate_per_hour": 60,
    "seed": 0,
    "restart_delay": 10,
    "policy_options": {},
}
CLUSTER = {
    "name": "small",
    "price_per_kwh": 0.2,
    "pue": 1.2,
    "nodes": [
        {"count": 2, "gpu": "V100", "gpus_per_node": 4, "name_prefix": "v-"},
        {"count": 1, "gpu": "K80", "gpus_per_node": 2, "pue": 1.5},
    ],
}
#: a shared run (task placement): shares, CPU and memory per task, a CPU-only task, a GPU-type constraint, on nodes
#: that share GPUs
SHARED_TRACE = (
    ["job_id", "arrival", "num_gpus", "job_type", "duration", "gpu_milli", "cpu_milli", "memory_mib", "allowed_models"],
    [
        ["a", "0", "1", "any", "600", "460", "4000", "8192", ""],
        ["b", "30", "2", "any", "900", "", "8000", "16384", "V100"],
        ["c", "60", "0", "cpu-only", "300", "", "2000", "1024", ""],
        ["d", "90", "1", "any", "1200", "250", "1000", "2048", "K80+V100"],
    ],
)
SHARED_CLUSTER = {
    "name": "shared",
    "nodes": [
        {
            "count": 2,
            "gpu": "V100",
            "gpus_per_node": 4,
            "cpu_milli": 32000,
            "memory_mib": 1 << 17,
            "sharing": "fraction",
        },
        {
            "count": 1,
            "gpu": "K80",
            "gpus_per_node": 2,
            "cpu_milli": 16000,
            "memory_mib": 1 << 16,
            "sharing": "fraction",
        },
    ],
}
SWEEP = {"base": {"cluster": "gavel-60", "jobs": 15}, "grid": {"policy": ["fifo", "sjf"], "seed": [0, 1]}, "out": "sw"}
LIVE = {
    "policy": "fifo",
    "cluster": "gavel-60",
    "trace": "t.csv",
    "executor": {"kind": "local", "program": "synthetic", "time_scale": 100, "checkpoint_every": 1},
}

#: Gavel's summary.csv (crosscheck gavel): its traces/ and results/ folders cannot be given here (a Target's files
#: are written flat), so the target reads the summary and ends without a trace to run (exit 2) or refuses a row
GAVEL_SUMMARY = (
    ["trace", "policy", "jobs", "avg_jct_s", "median_jct_s", "makespan_s", "error", "command"],
    [
        ["t", "fifo_perf", "2", "1000.5", "900", "2000", "", "python sim.py -c 2:1:1 --seed 0 --time_per_iteration 60"],
        ["t", "max_min_fairness_perf", "2", "", "", "", "timeout", "python sim.py -c 2:1:1 --seed 1"],
        ["u", "max_min_fairness", "2", "1200", "1100", "2500", "", "python sim.py --cluster_spec 1:1:0"],
    ],
)
#: FGD's analysis_allo_discrete.csv (crosscheck fgd), flat beside the node list and the pod list of workload "w"
FGD_ANALYSIS = (
    ["workload", "sc_policy", "tune", "seed", "total_gpus", *map(str, range(131))],
    [
        ["openb_pod_list_w", "06-FGD", "1.3", "42", "10", *(f"{min(k * 0.9, 90):.2f}" for k in range(131))],
        ["openb_pod_list_w", "01-Random", "1.3", "43", "10", *(f"{min(k * 0.8, 85):.2f}" for k in range(131))],
    ],
)


SLURM_DATA = ROOT / "tests" / "slurm" / "data"
SACCT_LINES = [line.split("|") for line in (SLURM_DATA / "edge-cases.sacct").read_text().splitlines()[:8]]
SCONTROL_JSON = json.loads((SLURM_DATA / "nodes.json").read_text())
SCONTROL_TEXT = (SLURM_DATA / "nodes-edge.txt").read_bytes()


def _csv(header, rows):
    return table_bytes(header, rows)


def _without_first_line(data: bytes) -> bytes:
    return data.split(b"\n", 1)[-1]


def _hostile_number() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(HOSTILE_CELLS), st.integers(-5, 50).map(str), st.floats().map(repr))


def _option_argv(data: st.DataObject) -> list[str]:
    """A command that sizes work, with hostile values for its numeric options."""
    value = lambda: data.draw(_hostile_number())  # noqa: E731
    choices = [
        lambda: ["trace", "generate", "o.csv", "--jobs", value(), "--rate", value(), "--seed", value()],
        lambda: ["mig", "generate", "o.csv", "--n", value(), "--p-sup", value(), "--seed", value()],
        lambda: ["bench", "sim", "--jobs", value(), "--gpus", value(), "--rate", value(), "--json"],
        lambda: [
            "cluster",
            "simulate",
            "--policy",
            "fifo",
            "--jobs",
            value(),
            "--rate",
            value(),
            "--restart-delay",
            value(),
            "--round-length",
            value(),
            "--out",
            "r",
        ],
        lambda: ["mig", "plan", "tasks.csv", "--gpus", value()],
        lambda: ["packs", "plan", "profile.csv", "--procs", value(), "--k", value(), "--seed", value()],
        lambda: ["kernel", "bench", "--tasks", value()],
        lambda: ["bench", "kernel", "--tasks", value(), "--runs", value(), "--json"],
        lambda: ["trace", "info", "trace.csv", "--top", value()],
        lambda: ["cluster", "plan", "hadar", "snapshot.json", "--max-states", value()],
        lambda: ["cluster", "plan", "andreas", "state.json", "--max-it", value(), "--seed", value()],
        lambda: ["trace", "cluster", "nodes.csv", "--price-per-kwh", value(), "--pue", value()],
        lambda: ["bench", "import-slurm", "--lines", value(), "--json"],
        lambda: ["packs", "run", "plan.json", "--dry-run", "--cpus-per-proc", value(), "--timeout", value()],
        lambda: [
            "--limit",
            data.draw(st.sampled_from(["trace_jobs", "x", "json_depth", ""])) + "=" + value(),
            "limits",
        ],
    ]
    return data.draw(st.sampled_from(choices))()


def _serve_argv(data: st.DataObject) -> list[str]:
    """`gpuweave serve` with hostile values for its settings (issue 39 class 4: one model, one set of bounds).

    The database is in a folder that does not exist, so a run whose settings all pass still ends at once (exit 2,
    naming --db) instead of serving: every settings check comes before the database is opened.
    """
    value = lambda: data.draw(_hostile_number())  # noqa: E731
    options = {
        "--time-scale": value,
        "--checkpoint-every": value,
        "--max-retries": value,
        "--report-timeout": value,
        "--stop-timeout": value,
        "--restart-delay": value,
        "--seed": value,
        "--max-running-gpus": value,
        "--max-queued-jobs": value,
        "--job-memory": value,
        "--job-cpu-seconds": value,
        "--port": value,
        "--policy": lambda: data.draw(st.sampled_from(["fifo", "hadar", "gavel", "tiresias", "", "nope"])),
        "-O": lambda: data.draw(st.sampled_from(["round_length", "x", "seed", "", "="])) + "=" + value(),
        "--cluster": lambda: data.draw(st.sampled_from(["gavel-60", "nope", ""])),
        "--executor": lambda: data.draw(st.sampled_from(["local", "ray", "slurm", "nope"])),
    }
    chosen = data.draw(st.lists(st.sampled_from(sorted(options)), min_size=1, max_size=5, unique=True))
    argv = ["serve", "--db", "sqlite:///no-such-folder/service.db", "--data-dir", "d"]
    for name in chosen:
        argv += [name, options[name]()]
    return argv


#: scontrol text with node names that repeat, directly or through a multi-type node's ``<node>-<type>`` names
SCONTROL_REPEATS = [
    b"NodeName=gw0 Gres=gpu:v100:4 State=IDLE\nNodeName=gw1 Gres=gpu:v100:4\nNodeName=gw0 Gres=gpu:v100:2\n",
    b"NodeName=gw0 Gres=gpu:v100:4,gpu:k80:2\nNodeName=gw0-v100 Gres=gpu:v100:4\n",
    b"NodeName=gw0 Gres=gpu:a6000:4\nNodeName=gw1 Gres=gpu:A6000:2\n",
]
#: --gpu-map pairs that agree, repeat, or map one type (in another case) to two models
GPU_MAP_PAIRS = ["a6000=A10", "A6000=a10", "a6000=K80", "v100=V100", "V100=P100", "MISC=K80", "misc=T4", "t4=T4"]
#: cluster specs the loader must refuse: a key twice, a boolean or text where a number belongs
CLUSTER_YAML_HOSTILE = [
    b"name: x\nnodes:\n  - {count: 2, gpu: V100, gpus_per_node: 4}\nname: y\n",
    b"name: x\nnodes:\n  - {count: 2, count: 3, gpu: V100, gpus_per_node: 4}\n",
    b"name: x\nnodes:\n  - {count: true, gpu: V100, gpus_per_node: 4}\n",
    b"name: x\npue: '1.2'\nnodes:\n  - {count: 1, gpu: V100, gpus_per_node: false}\n",
    b"name: x\nd: &a {count: 1, gpu: V100, gpus_per_node: 4}\nnodes:\n  - {<<: *a, count: 2}\n",
]


def _gpu_map_argv(command: list[str]) -> Callable[[st.DataObject], list[str]]:
    """``command`` with zero to three ``--gpu-map`` pairs drawn from :data:`GPU_MAP_PAIRS`."""

    def argv(data: st.DataObject) -> list[str]:
        pairs = data.draw(st.lists(st.sampled_from(GPU_MAP_PAIRS), max_size=3), label="gpu-map")
        return [*command, *(arg for pair in pairs for arg in ("--gpu-map", pair))]

    return argv


@st.composite
def _wide_table(draw, first: list[str], delimiter: str) -> bytes:
    """A header of ``first`` and up to 30,000 more fields (past limit table_columns), and one record as wide."""
    extra = draw(st.integers(min_value=0, max_value=30_000), label="extra columns")
    names = [*first, *(f"x{i}" for i in range(extra))]
    return (delimiter.join(names) + "\n" + delimiter.join("1" for _ in names) + "\n").encode()


def _fixed(name: str, content: bytes) -> st.SearchStrategy[bytes]:
    return st.just(content)


def _table_text(header, rows) -> bytes:
    return ("\n".join(",".join(r) for r in [header, *rows]) + "\n").encode()


TARGETS: list[Target] = [
    Target("trace validate (schema)", {"t.csv": _csv(TRACE_HEADER, TRACE_ROWS)}, ["trace", "validate", "t.csv"]),
    Target("trace info (philly)", {"p.csv": _csv(*PHILLY)}, ["trace", "info", "p.csv", "--format", "philly"]),
    Target("trace cluster (helios vcs)", {"v.csv": _csv(*HELIOS_VCS)}, ["trace", "cluster", "v.csv", "--gpu", "V100"]),
    Target(
        "trace convert (pai)",
        {"pai_task_table.csv": _csv(*PAI_TASKS), "pai_job_table.csv": _csv(*PAI_JOBS)},
        ["trace", "convert", "pai_task_table.csv", "o.csv"],
    ),
    Target(
        "trace convert (pai, headerless as published)",
        {"pai_task_table.csv": _csv(*PAI_TASKS).map(_without_first_line)},
        ["trace", "convert", "pai_task_table.csv", "o.csv"],
    ),
    Target(
        "trace cluster (pai machines)",
        {"pai_machine_spec.csv": _csv(*PAI_MACHINES)},
        ["trace", "cluster", "pai_machine_spec.csv"],
    ),
    Target(
        "trace convert (helios)", {"cluster_log.csv": _csv(*HELIOS)}, ["trace", "convert", "cluster_log.csv", "o.csv"]
    ),
    Target(
        "trace convert (tiresias)",
        {"t.csv": _csv(*TIRESIAS)},
        ["trace", "convert", "t.csv", "o.csv", "--from", "tiresias"],
    ),
    Target(
        "trace info (alibaba pods)",
        {"pods.csv": _csv(*PODS)},
        ["trace", "info", "pods.csv", "--format", "alibaba-pods"],
    ),
    Target(
        "trace validate (alibaba jobs)",
        {"job_info_df.csv": _csv(*SPOT_JOBS)},
        ["trace", "validate", "job_info_df.csv", "--format", "alibaba-jobs"],
    ),
    Target(
        "trace info (gavel)",
        {"g.trace": table_bytes([], GAVEL, delimiter="\t")},
        ["trace", "info", "g.trace", "--format", "gavel"],
    ),
    Target("trace info (pollux)", {"w.csv": _csv(*POLLUX)}, ["trace", "info", "w.csv", "--format", "pollux"]),
    Target("trace cluster (openb nodes)", {"nodes.csv": _csv(*OPENB_NODES)}, ["trace", "cluster", "nodes.csv"]),
    Target(
        "cluster fill (openb nodes and pods)",
        {"nodes.csv": _csv(*OPENB_NODES), "pods.csv": _csv(*FILL_PODS)},
        ["cluster", "fill", "--nodes", "nodes.csv", "--pods", "pods.csv", "--out", "run", "-q"],
    ),
    Target(
        "cluster fill (mig_profile pods, sharing: mig spec)",
        {
            "pods.csv": _mig_pods(),
            "c.yaml": st.one_of(st.just(json.dumps(MIG_CLUSTER).encode()), document_bytes(MIG_CLUSTER, as_yaml=True)),
        },
        _mig_fill_argv,
    ),
    Target(
        "trace info (alibaba pods, mig_profile)",
        {"pods.csv": _mig_timed_pods()},
        ["trace", "info", "pods.csv", "--format", "alibaba-pods"],
    ),
    Target(
        "trace cluster (spot nodes)",
        {"node_info_df.csv": _csv(*SPOT_NODES)},
        ["trace", "cluster", "node_info_df.csv", "--catalog-only"],
    ),
    Target(
        "cluster simulate (config)",
        {"run.yaml": document_bytes(RUN_CONFIG, as_yaml=True)},
        ["cluster", "simulate", "run.yaml", "--out", "r"],
    ),
    Target(
        "cluster simulate (trace)",
        {"t.csv": _csv(TRACE_HEADER, TRACE_ROWS)},
        ["cluster", "simulate", "--policy", "sjf", "--trace", "t.csv", "--out", "r"],
    ),
    Target(
        "cluster simulate (shared run: shares, CPU-only tasks)",
        {"t.csv": _csv(*SHARED_TRACE), "c.yaml": document_bytes(SHARED_CLUSTER, as_yaml=True)},
        ["cluster", "simulate", "--policy", "fifo", "--trace", "t.csv", "--cluster", "c.yaml", "--profiles", "traced"]
        + ["--placement-rule", "fgd", "--sharing", "whole,fraction", "--out", "r"],
    ),
    Target(
        "trace convert (alibaba pods, --cpu-tasks)",
        {
            "pods.csv": table_bytes(
                [*FILL_PODS[0], *OPENB_TIMES], [[*r, "LS", "Running", "0", "600", "0"] for r in FILL_PODS[1]]
            )
        },
        ["trace", "convert", "pods.csv", "o.csv", "--from", "alibaba-pods", "--cpu-tasks"],
    ),
    Target("cluster show (spec)", {"c.yaml": document_bytes(CLUSTER, as_yaml=True)}, ["cluster", "show", "c.yaml"]),
    Target(
        "cluster run (live config, --executor bogus)",
        {
            "live.yaml": document_bytes(LIVE, as_yaml=True),
            "t.csv": st.just(_table_text(TRACE_HEADER[:5], [r[:5] for r in TRACE_ROWS])),
        },
        ["cluster", "run", "live.yaml", "--executor", "nonesuch", "--out", "o"],
    ),
    Target(
        "sweep (spec)",
        {"s.yaml": document_bytes(SWEEP, as_yaml=True)},
        ["sweep", "s.yaml", "--no-progress", "--workers", "1"],
    ),
    Target(
        "mig plan (TASKS.csv)",
        {"tasks.csv": _csv(*MIG_TASKS)},
        ["mig", "plan", "tasks.csv", "--json", "s.json", "--gantt", "g.png"],  # task names drawn in the chart
    ),
    Target("mig validate (schedule)", {"s.json": document_bytes(SCHEDULE)}, ["mig", "validate", "s.json"]),
    Target("mig run --dry-run (schedule)", {"s.json": document_bytes(SCHEDULE)}, ["mig", "run", "s.json", "--dry-run"]),
    Target(
        "packs plan (profile)",
        {"p.csv": _csv(*PACKS)},
        ["packs", "plan", "p.csv", "--json", "plan.json", "--gantt", "g.png"],  # task names drawn in the chart
    ),
    Target(
        "packs run --dry-run (plan)",
        {"plan.json": document_bytes(PLAN)},
        ["packs", "run", "plan.json", "--dry-run", "--command", "echo {task} {procs} {cpus}"],
    ),
    Target("cluster plan hadar (snapshot)", {"s.json": document_bytes(HADAR)}, ["cluster", "plan", "hadar", "s.json"]),
    Target(
        "cluster plan andreas (snapshot)",
        {"s.json": document_bytes(ANDREAS)},
        ["cluster", "plan", "andreas", "s.json", "--exact"],
    ),
    Target(
        "kernel simulate (config)",
        {
            "k.yaml": document_bytes(KERNEL_CONFIG, as_yaml=True),
            "trace.json": st.just(json.dumps(KERNEL_TRACE).encode()),
        },
        ["kernel", "simulate", "k.yaml"],
    ),
    Target(
        "kernel simulate (trace file)",
        {"k.json": st.just(json.dumps(KERNEL_CONFIG).encode()), "trace.json": document_bytes(KERNEL_TRACE)},
        ["kernel", "simulate", "k.json"],
    ),
    Target(
        "kernel profile (traces)",
        {"a.json": st.just(json.dumps(KERNEL_TRACE).encode()), "b.json": document_bytes(KERNEL_TRACE)},
        ["kernel", "profile", "a.json", "b.json", "--task-key", "t", "--out", "p"],
    ),
    Target(
        "trace import-torch (chrome trace)",
        {"c.json": document_bytes(CHROME)},
        ["trace", "import-torch", "c.json", "--out", "o.json"],
    ),
    Target(
        "trace import-slurm (sacct)",
        {"jobs.sacct": table_bytes(SACCT_LINES[0], SACCT_LINES[1:], delimiter="|")},
        ["trace", "import-slurm", "jobs.sacct", "--out", "t.csv"],
    ),
    Target(
        "cluster import-slurm (scontrol --json)",
        {"nodes.json": document_bytes(SCONTROL_JSON)},
        ["cluster", "import-slurm", "nodes.json", "--out", "c.yaml"],
    ),
    Target(
        "cluster import-slurm (scontrol text)",
        {"nodes.txt": damaged_bytes(SCONTROL_TEXT)},
        ["cluster", "import-slurm", "nodes.txt"],
    ),
    Target(
        "crosscheck gavel (summary.csv)",
        {"summary.csv": _csv(*GAVEL_SUMMARY)},
        ["crosscheck", "gavel", "--data", ".", "--out", "o", "-q"],
    ),
    Target(
        "crosscheck fgd (analysis, nodes, pods)",
        {
            "analysis_allo_discrete.csv": _csv(*FGD_ANALYSIS),
            "openb_node_list_gpu_node.csv": st.just(_table_text(*OPENB_NODES)),
            "openb_pod_list_w.csv": st.just(_table_text(*FILL_PODS)),
        },
        ["crosscheck", "fgd", "--data", ".", "--out", "o", "-q"],
    ),
    Target(
        "cluster import-slurm (repeated node names, --gpu-map)",
        {"nodes.txt": st.sampled_from(SCONTROL_REPEATS)},
        _gpu_map_argv(["cluster", "import-slurm", "nodes.txt", "--out", "c.yaml"]),
    ),
    Target(
        "trace cluster (pai machines, --gpu-map)",
        {"pai_machine_spec.csv": _csv(*PAI_MACHINES)},
        _gpu_map_argv(["trace", "cluster", "pai_machine_spec.csv", "c.yaml"]),
    ),
    Target(
        "cluster show (duplicate keys, wrong types)",
        {"c.yaml": st.sampled_from(CLUSTER_YAML_HOSTILE)},
        ["cluster", "show", "c.yaml"],
    ),
    Target(
        "trace import-slurm (wide header)",
        {"jobs.sacct": _wide_table(["JobID", "State", "Submit", "Start", "End", "AllocTRES"], "|")},
        ["trace", "import-slurm", "jobs.sacct", "--out", "t.csv"],
    ),
    Target(
        "trace validate (wide header)",
        {"t.csv": _wide_table(TRACE_HEADER[:5], ",")},
        ["trace", "validate", "t.csv"],
    ),
    Target("serve (settings)", {}, _serve_argv),
    Target(
        "option values",
        {
            "tasks.csv": st.just(_table_text(*MIG_TASKS)),
            "profile.csv": st.just(_table_text(*PACKS)),
            "trace.csv": st.just(_table_text(TRACE_HEADER[:5], [r[:5] for r in TRACE_ROWS])),
            "snapshot.json": st.just(json.dumps(HADAR).encode()),
            "state.json": st.just(json.dumps(ANDREAS).encode()),
            "nodes.csv": st.just(_table_text(*OPENB_NODES)),
            "plan.json": st.just(json.dumps(PLAN).encode()),
        },
        _option_argv,
    ),
]
