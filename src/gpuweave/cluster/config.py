"""The configuration of one cluster simulation run (what `gpuweave simulate CONFIG.yaml` reads).

Every field has a default except the policy, so a config can be as short as ``policy: fifo``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuweave.errors import InputError
from gpuweave.files import load_yaml
from gpuweave.results import config_key


class SimulationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    policy: str = Field(description="registered cluster policy name (gpuweave policies)")
    policy_options: dict[str, Any] = Field(default_factory=dict, description="keyword options of the policy")
    cluster: str = Field("gavel-60", description="bundled cluster name or path to a cluster YAML")
    trace: str | None = Field(None, description="trace file in the gpuweave schema; None = Philly-like generator")
    jobs: int = Field(200, ge=1, description="generated jobs (when trace is None)")
    rate_per_hour: float = Field(60.0, gt=0, description="generated Poisson arrival rate, jobs/hour (the load)")
    seed: int = Field(0, description="seed of the generator and of randomised policies")
    restart_delay: float = Field(10.0, ge=0, description="seconds a resumed or moved job holds GPUs without progress")
    start_delay: float = Field(0.0, ge=0, description="seconds a job's first start holds GPUs without progress")
    round_length: float | None = Field(None, gt=0, description="override the policy's round length (s)")
    profiles: str | None = Field(
        None, description="profile CSV, or a directory of Pollux application traces; None = bundled Gavel throughputs"
    )
    extrapolate_profiles: bool = Field(False, description="extrapolate throughputs to GPU counts beyond the table")
    placement: Literal["physical", "ideal"] | None = Field(
        None, description="override the cluster's placement: ideal = every placement runs consolidated"
    )

    def key(self) -> str:
        """Stable hash of the config (sweep cache key); an unset placement leaves the key as it was before."""
        return config_key(self.model_dump(mode="json", exclude={"placement"} if self.placement is None else None))


def load_config(path: str | Path) -> SimulationConfig:
    """A run config file. A live run's config (``gpuweave cluster run``) is this plus an ``executor`` section,
    which a simulation ignores, so the same file gives the simulated run to compare a live one with."""
    path = Path(path)
    data = load_yaml(path, what="run config file") or {}
    if isinstance(data, dict) and "executor" in data:
        data = {key: value for key, value in data.items() if key != "executor"}
    return beside_config(parse_config(data, path), path)


def beside_config(config: SimulationConfig, path: Path) -> SimulationConfig:
    """Trace and cluster files named relative to the config file are found beside it (examples run from
    anywhere); a name that is not a file there (a bundled cluster, a path relative to the working directory)
    is left as it is."""
    for key in ("trace", "cluster", "profiles"):
        value = getattr(config, key)
        if value is not None and not Path(value).is_absolute() and (path.parent / value).exists():
            config = config.model_copy(update={key: str(path.parent / value)})
    return config


def parse_config(data: dict, source: str | Path = "<config>") -> SimulationConfig:
    try:
        return SimulationConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise InputError(err["msg"], file=source, field=field) from None
