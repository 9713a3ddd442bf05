"""The configuration of one cluster simulation run (what `gpuweave simulate CONFIG.yaml` reads).

Every field has a default except the policy, so a config can be as short as ``policy: fifo``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpuweave.checks import (
    MAX_SECONDS,
    RATE_PER_HOUR,
    ROUND_LENGTH,
    RUN_SETTINGS,
    SEED,
    finite_options,
    validation_error,
)
from gpuweave.cluster.placements import known_placement, names_placing
from gpuweave.errors import InputError
from gpuweave.files import check_path, load_yaml
from gpuweave.limits import check_limit
from gpuweave.results import config_key


class SimulationConfig(BaseModel):
    # numbers are finite and physical (gpuweave.checks); the job count is under the limit trace_jobs
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    policy: str = Field(description="registered cluster policy name (gpuweave policies)")
    policy_options: dict[str, Any] = Field(default_factory=dict, description="keyword options of the policy")
    cluster: str = Field("gavel-60", description="bundled cluster name or path to a cluster YAML")
    trace: str | None = Field(None, description="trace file in the gpuweave schema; None = Philly-like generator")
    jobs: int = Field(200, ge=1, description="generated jobs (when trace is None)")
    rate_per_hour: float = Field(
        60.0,
        ge=RATE_PER_HOUR.lo,
        le=RATE_PER_HOUR.hi,
        description="generated Poisson arrival rate, jobs/hour (the load)",
    )
    seed: int = Field(0, ge=SEED.lo, le=SEED.hi, description="seed of the generator and of randomised policies")
    restart_delay: float = Field(
        10.0, ge=0, le=MAX_SECONDS, description="seconds a resumed or moved job holds GPUs without progress"
    )
    start_delay: float = Field(
        0.0, ge=0, le=MAX_SECONDS, description="seconds a job's first start holds GPUs without progress"
    )
    round_length: float | None = Field(
        None, ge=ROUND_LENGTH.lo, le=MAX_SECONDS, description="override the policy's round length (s)"
    )
    profiles: str | None = Field(
        None,
        description="profile CSV, a directory of Pollux application traces, or 'traced' (every job at its trace's "
        "duration on any GPU: a replay); None = bundled Gavel throughputs",
    )
    extrapolate_profiles: bool = Field(False, description="extrapolate throughputs to GPU counts beyond the table")
    placement: Literal["physical", "ideal"] | None = Field(
        None, description="override the cluster's placement: ideal = every placement runs consolidated"
    )
    placement_rule: str | None = Field(
        None,
        description="where a gang goes on a GPU model, or a task placement for jobs sharing GPUs (fgd, best-fit, "
        "...; gpuweave cluster placements); None = packed",
    )

    sharing: Literal["whole", "fraction", "mig"] | None = Field(
        None,
        description="a shared run (task placement) with every node group's sharing set to this: whole (shares "
        "rounded up to the GPU), fraction or mig; None = each group's own",
    )
    arrival_scale: float = Field(
        1.0,
        gt=0,
        description="compress (< 1) or stretch (> 1) the jobs' arrivals: each becomes first + (arrival - first) * "
        "arrival_scale, first the earliest; work and durations unchanged (0.5: twice the load); 1 = as given",
    )

    @field_validator("cluster", "trace", "profiles")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        return None if value is None else check_path(value)

    @field_validator("policy_options")
    @classmethod
    def _finite_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        return finite_options(value, RUN_SETTINGS)  # YAML reads .inf and .nan; a policy takes plain values

    @field_validator("placement_rule")
    @classmethod
    def _known_rule(cls, value: str | None) -> str | None:
        return known_placement(value)

    @model_validator(mode="after")
    def _within_limits(self) -> SimulationConfig:
        if self.trace is None:
            check_limit("trace_jobs", self.jobs, "generated jobs", field="jobs")
        if self.sharing is not None and self.placement_rule not in names_placing("tasks"):
            raise ValueError(
                f"sharing: {self.sharing} is for tasks on shared GPUs: give a task placement as placement_rule "
                f"({', '.join(names_placing('tasks'))})"
            )
        return self

    def key(self) -> str:
        """Stable hash of the config (sweep cache key); an unset placement, placement rule or sharing, and an
        arrival_scale of 1, leave the key as it was before they existed."""
        unset = {name for name in ("placement", "placement_rule", "sharing") if getattr(self, name) is None}
        if self.arrival_scale == 1.0:
            unset.add("arrival_scale")
        return config_key(self.model_dump(mode="json", exclude=unset or None))


def load_config(path: str | Path) -> SimulationConfig:
    """A run config file. A live run's config (``gpuweave cluster run``) is this plus an ``executor`` section,
    which a simulation ignores, so the same file gives the simulated run to compare a live one with."""
    path = Path(path)
    data = load_yaml(path, what="run config file") or {}
    if isinstance(data, dict) and "executor" in data:
        data = {key: value for key, value in data.items() if key != "executor"}
    return beside_config(parse_config(data, path), path)


C = TypeVar("C", bound="SimulationConfig")


def beside_config(config: C, path: Path) -> C:
    """Trace and cluster files named relative to the config file are found beside it (examples run from
    anywhere); a name that is not a file there (a bundled cluster, a path relative to the working directory)
    is left as it is."""
    for key in ("trace", "cluster", "profiles"):
        value = getattr(config, key)
        if value is not None and not Path(value).is_absolute() and (path.parent / value).exists():
            config = config.model_copy(update={key: str(path.parent / value)})
    return config


def parse_config(data: dict[str, Any], source: str | Path = "<config>") -> SimulationConfig:
    """The checked config; InputError naming the field (and, for ``jobs``, the limit ``trace_jobs``)."""
    if not isinstance(data, dict):
        raise InputError("a run config must be a mapping of settings (policy: NAME, ...)", file=source)
    try:
        return SimulationConfig.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, source) from None
