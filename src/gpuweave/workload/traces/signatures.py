"""How a public trace gives its format away without being read: signature header columns, published file names.

Below both :mod:`gpuweave.workload.traces.formats` (format detection) and :mod:`gpuweave.workload.traces.schema`
(which refuses a public trace given where a schema file is expected and says how to convert it).
"""

from __future__ import annotations

from pathlib import Path

# header columns that identify each CSV format (all must be present)
_SIGNATURES: tuple[tuple[str, frozenset[str]], ...] = (
    ("alibaba-pods", frozenset({"name", "num_gpu", "gpu_milli"})),
    ("alibaba-jobs", frozenset({"job_name", "gpu_request", "worker_num"})),
    ("helios", frozenset({"gpu_num", "submit_time", "start_time", "end_time"})),
    ("tiresias", frozenset({"job_id", "num_gpu", "submit_time"})),
    ("philly", frozenset({"timestamp", "duration", "num_gpus", "cluster"})),
    ("pollux", frozenset({"name", "time", "application", "num_replicas", "batch_size"})),
    ("pai", frozenset({"job_name", "task_name", "inst_num", "plan_gpu"})),
)

# PAI 2020's tables have no header line: they are known by their published file names
_PAI_TASKS, _PAI_JOBS = "pai_task_table", "pai_job_table"


def format_of_name(path: str | Path) -> str | None:
    """The format a file's published name gives away (PAI's headerless task table), or None."""
    return "pai" if Path(path).name.lower().startswith(_PAI_TASKS) else None


def format_of_columns(columns) -> str | None:
    """The readable format other than the schema whose signature columns are all among ``columns``, or None."""
    names = {str(name).strip() for name in columns}
    return next((name for name, signature in _SIGNATURES if signature <= names), None)
