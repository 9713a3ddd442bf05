"""What the API reads and writes: submissions (with quotas), listings, cancellation, nodes, events, the policy.

The API never touches the scheduling loop's memory: it commits to the database and flags the row
(``pending_sync``, ``api_rev``); the loop (:mod:`gpuweave.service.scheduler`) picks the change up at its next sync.
A user sees only their own jobs (another user's job is "not found"); an admin sees every job.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Select, and_, case, func, insert, select, update
from sqlalchemy.engine import Engine, Row

from gpuweave.errors import InputError
from gpuweave.live.local import WorkerLimits
from gpuweave.service.auth import User
from gpuweave.service.db import ACTIVE_STATES, attempts, events, jobs, reading, samples, users, writing
from gpuweave.service.ledger import add_event, get_setting, put_setting
from gpuweave.service.schemas import JobSubmit
from gpuweave.workload.profile_source import ProfileSource

if TYPE_CHECKING:
    from gpuweave.hardware.cluster_spec import Node

WAITING = ("queued", "preempted")
RUNNING = ("running", "checkpointing")  # states of a job that holds GPUs


class ApiError(Exception):
    """An answer other than 2xx: status, one-line message and the field it is about."""

    def __init__(self, status: int, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.field = status, detail, field


@dataclass
class Limits:
    default_max_running_gpus: int | None = None
    default_max_queued_jobs: int | None = None
    allow_commands: bool = False
    worker_limits: WorkerLimits | None = None  # host memory and CPU of a non-admin user's worker (local executor)


class Store:
    def __init__(
        self,
        engine: Engine,
        nodes: list[Node],
        profiles: ProfileSource,
        limits: Limits,
        live_steps: Callable[[], dict[int, int]] | None = None,
        ideal_placement: bool = False,
        live_energy: Callable[[], dict[int, tuple[float, float]]] | None = None,
        live_totals: Callable[[], dict[str, float] | None] | None = None,
        currency: str = "$",
        shared: bool = False,
    ) -> None:
        """``live_steps()``: steps done per running job as the scheduling loop last saw them (optional);
        ``ideal_placement``: the cluster's (a job too wide for one node may still run, as the book judges it);
        ``live_energy()``: energy (J) and cost so far per job holding GPUs, its current placement included (the
        database has them only up to the job's last ended attempt); ``live_totals()``: the cluster's power (W),
        energy (J) and cost now (None: the last utilisation sample's are shown); ``currency``: the cluster
        spec's, what every cost is in; ``shared``: the service's placement is a task placement, so jobs may ask
        shares of GPUs, CPU and memory (gpuweave.cluster.sharing.ledger)."""
        self.shared = shared
        self.currency = currency
        self.live_steps = live_steps or dict
        self.live_energy = live_energy or dict
        self.live_totals = live_totals or (lambda: None)
        self.engine = engine
        self.nodes = nodes
        self.profiles = profiles
        self.limits = limits
        self.ideal_placement = ideal_placement

    # ------------------------------------------------------------------ jobs
    def submit(self, user: User, spec: JobSubmit) -> dict[str, Any]:
        from gpuweave.service.jobs import (
            ADAPTIVE_FIELDS,
            SHARE_FIELDS,
            adaptive_problem,
            check_program,
            is_builtin,
            never_fits,
            never_fits_shares,
        )

        if not is_builtin(spec.program) and not (user.admin or self.limits.allow_commands):
            raise ApiError(
                403, "only admins may submit commands (the service runs without --allow-commands)", "program"
            )
        try:
            check_program(spec.program)
        except InputError as exc:
            raise ApiError(422, exc.message, "program") from None
        gpu_types = sorted(set(spec.gpu_types)) if spec.gpu_types else None
        problem = never_fits(self.nodes, self.profiles, spec.job_type, spec.gpus, gpu_types, self.ideal_placement)
        problem = problem or never_fits_shares(self.nodes, spec, self.shared) or adaptive_problem(spec)
        if problem is not None:
            raise ApiError(422, problem.message, problem.field)
        policy = self.policy().get("name")
        if spec.batch_size is None and _decides_on_agents(policy):
            raise ApiError(422, f"policy '{policy}' decides on adaptive jobs only: {_ADAPTIVE_HINT}", "batch_size")
        max_gpus = user.max_running_gpus or self.limits.default_max_running_gpus
        if max_gpus is not None and spec.gpus > max_gpus:
            raise ApiError(422, f"{spec.gpus} GPUs exceed your quota of {max_gpus} running GPUs", "gpus")
        max_queued = user.max_queued_jobs or self.limits.default_max_queued_jobs
        now = time.time()
        values = {
            "user_id": user.id,
            "name": spec.name,
            "state": "queued",
            "program": spec.program,
            "job_type": spec.job_type,
            "gpus": spec.gpus,
            "gpu_types": json.dumps(gpu_types) if gpu_types else None,
            **{name: getattr(spec, name) for name in SHARE_FIELDS},
            **{name: getattr(spec, name) for name in ADAPTIVE_FIELDS},
            "steps": spec.steps,
            "priority": spec.priority,
            "deadline_s": spec.deadline_s,
            "submitted_at": now,
            "admitted": False,
            "held": "",
            "attempts": 0,
            "crashes": 0,
            "committed": 0,
            "restarts": 0,
            "reason": "",
            "cancel_requested": False,
            "api_rev": 1,
            "pending_sync": True,
            "gpu_seconds": 0.0,
            "energy_j": 0.0,
            "cost": 0.0,
        }
        with writing(self.engine) as conn:
            # The user's row lock serialises one user's submissions, so two cannot both pass the quota.
            conn.execute(select(users.c.id).where(users.c.id == user.id).with_for_update())
            if max_queued is not None:
                queued = conn.execute(
                    select(func.count()).where(jobs.c.user_id == user.id, jobs.c.state.in_(WAITING))
                ).scalar_one()
                if queued >= max_queued:
                    raise ApiError(
                        429, f"quota: you have {queued} waiting jobs (max_queued_jobs {max_queued})", "quota"
                    )
            new = conn.execute(insert(jobs).values(**values)).inserted_primary_key
            assert new is not None  # a one-row INSERT without RETURNING always has its primary key
            job_id = new[0]
            add_event(conn, "submitted", job_id=job_id, user_id=user.id, name=spec.name, gpus=spec.gpus)
        row = SimpleNamespace(**values, id=job_id, user=user.name, started_at=None, ended_at=None, placement=None)
        return self.job_out(row)  # what was committed, without reading it back

    def _visible(self, user: User) -> ColumnElement[bool]:
        return jobs.c.id.isnot(None) if user.admin else jobs.c.user_id == user.id

    def list_jobs(
        self,
        user: User,
        *,
        state: Sequence[str] | None = None,
        owner: str | None = None,
        name: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> dict[str, Any]:
        where = [self._visible(user)]
        if state:
            where.append(jobs.c.state.in_(state))
        if owner:
            where.append(users.c.name == owner)
        if name:
            where.append(jobs.c.name == name)
        base = select(jobs, users.c.name.label("user")).join(users, users.c.id == jobs.c.user_id).where(and_(*where))
        with reading(self.engine) as conn:
            total = conn.execute(select(func.count()).select_from(base.subquery())).scalar_one()
            rows = conn.execute(base.order_by(jobs.c.id.desc()).limit(limit).offset(offset)).all()
        return {"jobs": [self.job_out(r) for r in rows], "total": total}

    def job(self, user: User, job_id: int, history: bool = False) -> dict[str, Any]:
        query = (
            select(jobs, users.c.name.label("user"))
            .join(users, users.c.id == jobs.c.user_id)
            .where(jobs.c.id == job_id, self._visible(user))
        )
        with reading(self.engine) as conn:
            row = conn.execute(query).first()
            if row is None:
                raise ApiError(404, f"no job {job_id}", "job_id")
            out = self.job_out(row)
            if history:
                rows = conn.execute(
                    select(attempts).where(attempts.c.job_id == job_id).order_by(attempts.c.number)
                ).all()
                out["history"] = [self.attempt_out(a) for a in rows]
        return out

    def cancel(self, user: User, job_id: int) -> tuple[dict[str, Any], int]:
        """Cancel a job: a waiting one at once (200), a running one by asking the loop to end it (202)."""
        with writing(self.engine) as conn:
            row = conn.execute(
                select(jobs.c.state, jobs.c.user_id).where(jobs.c.id == job_id, self._visible(user)).with_for_update()
            ).first()
            if row is None:
                raise ApiError(404, f"no job {job_id}", "job_id")
            if row.state not in ACTIVE_STATES:
                raise ApiError(409, f"job {job_id} is already {row.state}", "job_id")
            values: dict[str, Any] = {"cancel_requested": True, "api_rev": jobs.c.api_rev + 1, "pending_sync": True}
            waiting = row.state in WAITING
            if waiting:  # the loop's launch is conditional on the state: it cannot start the job after this
                values.update(state="cancelled", placement=None, ended_at=time.time(), reason="cancelled by its user")
            conn.execute(update(jobs).where(jobs.c.id == job_id).values(**values))
            add_event(conn, "cancelled" if waiting else "cancel-requested", job_id=job_id, user_id=row.user_id)
        return self.job(user, job_id), 200 if waiting else 202

    # ------------------------------------------------------------------ shaping rows
    def placement_out(self, text: str | None) -> list[dict[str, Any]] | None:
        if not text:
            return None
        parts = []
        for node, gpus in json.loads(text):
            n = self.nodes[node] if 0 <= node < len(self.nodes) else None
            parts.append({"node": n.name if n else str(node), "gpu_type": n.gpu_model if n else "?", "gpus": gpus})
        return parts

    def job_out(self, r: Row[Any] | SimpleNamespace) -> dict[str, Any]:
        from gpuweave.service.jobs import ADAPTIVE_FIELDS

        done = max(r.committed, self.live_steps().get(r.id, 0)) if r.state == "running" else r.committed
        energy_j, cost = r.energy_j, r.cost
        if r.state in RUNNING:
            energy_j, cost = self._live_energy(r.id, energy_j, cost)
        return {
            "id": r.id,
            "name": r.name,
            "user": r.user,
            "state": r.state,
            "program": r.program,
            "job_type": r.job_type,
            "gpus": r.gpus,
            "gpu_types": json.loads(r.gpu_types) if r.gpu_types else None,
            "gpu_milli": getattr(r, "gpu_milli", None),
            "cpu_milli": getattr(r, "cpu_milli", None),
            "memory_mib": getattr(r, "memory_mib", None),
            **{name: getattr(r, name, None) for name in ADAPTIVE_FIELDS},
            "steps": r.steps,
            "committed_steps": r.committed,
            "steps_done": done,
            "progress": round(min(1.0, done / r.steps), 6) if r.steps else 0.0,
            "priority": r.priority,
            "deadline_s": r.deadline_s,
            "submitted_at": r.submitted_at,
            "started_at": r.started_at,
            "ended_at": r.ended_at,
            "attempts": r.attempts,
            "restarts": r.restarts,
            "placement": self.placement_out(r.placement),
            "held": r.held,
            "reason": r.reason,
            "cancel_requested": bool(r.cancel_requested),
            "energy_j": energy_j,
            "cost": cost,
        }

    def _live_energy(self, job_id: int, energy_j: float, cost: float) -> tuple[float, float]:
        """A running job's energy and cost so far: the loop's live figures, never less than what is committed."""
        live = self.live_energy().get(job_id)
        if live is None:
            return energy_j, cost
        return max(energy_j, live[0]), max(cost, live[1])

    def attempt_out(self, a: Row[Any]) -> dict[str, Any]:
        return {
            "number": a.number,
            "kind": a.kind,
            "placement": self.placement_out(a.placement) or [],
            "forked": bool(a.forked),
            "started_at": a.started_at,
            "ended_at": a.ended_at,
            "saved_steps": a.saved,
            "outcome": a.outcome,
        }

    # ------------------------------------------------------------------ nodes, events, users
    def nodes_out(self, user: User) -> list[dict[str, Any]]:
        query = (
            select(jobs.c.id, jobs.c.name, jobs.c.user_id, jobs.c.placement, jobs.c.gpu_milli)
            .add_columns(users.c.name.label("user"))
            .join(users, users.c.id == jobs.c.user_id)
            .where(jobs.c.state.in_(("running", "checkpointing")), jobs.c.placement.isnot(None))
        )
        out = [
            {"index": n.index, "name": n.name, "gpu_type": n.gpu_model, "gpus": n.num_gpus, "busy": 0, "jobs": []}
            for n in self.nodes
        ]
        with reading(self.engine) as conn:
            rows = conn.execute(query).all()
        for r in rows:
            mine = user.admin or r.user_id == user.id
            share = (r.gpu_milli or 1000) / 1000  # a task of a shared run holds this much of each GPU
            for node, gpus in json.loads(r.placement):
                if 0 <= node < len(out):
                    out[node]["busy"] = round(out[node]["busy"] + gpus * share, 3)
                    out[node]["jobs"].append(
                        {
                            "id": r.id if mine else None,
                            "name": r.name if mine else None,
                            "user": r.user if mine else None,
                            "gpus": gpus,
                            "share": share,
                        }
                    )
        return out

    def events_out(
        self, user: User, *, after: int = 0, job_id: int | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        query = select(events, users.c.name.label("user")).outerjoin(users, users.c.id == events.c.user_id)
        query = query.where(events.c.id > after)
        if not user.admin:
            query = query.where(events.c.user_id == user.id)
        if job_id is not None:
            query = query.where(events.c.job_id == job_id)
        with reading(self.engine) as conn:
            rows = conn.execute(query.order_by(events.c.id.desc()).limit(limit)).all()
        return [
            {
                "id": r.id,
                "at": r.at,
                "sim": r.sim,
                "kind": r.kind,
                "job_id": r.job_id,
                "user": r.user,
                "detail": json.loads(r.detail or "{}"),
            }
            for r in reversed(rows)
        ]

    def me(self, user: User) -> dict[str, Any]:
        with reading(self.engine) as conn:
            queued = conn.execute(
                select(func.count()).where(jobs.c.user_id == user.id, jobs.c.state.in_(WAITING))
            ).scalar_one()
            running = conn.execute(
                select(func.coalesce(func.sum(jobs.c.gpus), 0)).where(
                    jobs.c.user_id == user.id, jobs.c.state.in_(("running", "checkpointing"))
                )
            ).scalar_one()
        return {
            "name": user.name,
            "admin": user.admin,
            "max_running_gpus": user.max_running_gpus or self.limits.default_max_running_gpus,
            "max_queued_jobs": user.max_queued_jobs or self.limits.default_max_queued_jobs,
            "queued_jobs": int(queued),
            "running_gpus": int(running),
            **self._host_quota(user),
        }

    def _host_quota(self, user: User) -> dict[str, Any]:
        limits = None if user.admin else self.limits.worker_limits
        if limits is None:
            return {"job_memory_bytes": None, "job_cpu_seconds": None}
        return {"job_memory_bytes": limits.memory_bytes, "job_cpu_seconds": limits.cpu_seconds}

    # ------------------------------------------------------------------ policy
    def policy(self) -> dict[str, Any]:
        with reading(self.engine) as conn:
            return get_setting(conn, "policy") or {}

    def set_policy(self, user: User, name: str, options: dict[str, Any], round_length: float | None) -> dict[str, Any]:
        if self.shared:  # only a policy that places through the run's rule can drive tasks sharing GPUs
            from gpuweave.cluster.policies import POLICIES

            if name in POLICIES and not getattr(POLICIES.get(name).impl, "places_tasks", False):
                raise ApiError(
                    422, f"policy '{name}' places jobs by its own rule; this service's tasks share GPUs", "name"
                )
        if _decides_on_agents(name):  # it decides on every job's agent: each unfinished job must be adaptive
            with reading(self.engine) as conn:
                rigid = conn.execute(
                    select(jobs.c.id, jobs.c.name)
                    .where(jobs.c.state.in_(ACTIVE_STATES), jobs.c.batch_size.is_(None))
                    .order_by(jobs.c.id)
                    .limit(1)
                ).first()
            if rigid is not None:
                raise ApiError(
                    422,
                    f"policy '{name}' decides on adaptive jobs only, and job {rigid.id} ({rigid.name}) is not one: "
                    f"{_ADAPTIVE_HINT}",
                    "name",
                )
        with writing(self.engine) as conn:
            current = get_setting(conn, "policy") or {"version": 0}
            value = {"name": name, "options": options, "round_length": round_length, "version": current["version"] + 1}
            put_setting(conn, "policy", value)
            add_event(conn, "policy-changed", user_id=user.id, name=name, options=options, version=value["version"])
        return value

    # ------------------------------------------------------------------ dashboard
    def dashboard(self, user: User, series_points: int = 600) -> dict[str, Any]:
        """The queue, running jobs, the GPU map, per-user totals, energy and cost, decisions, utilisation."""
        waiting = self.list_jobs(user, state=list(WAITING), limit=200)
        running = self.list_jobs(user, state=["running", "checkpointing"], limit=500)
        recent = self.list_jobs(user, state=["done", "failed", "cancelled"], limit=20)
        with reading(self.engine) as conn:
            rows = conn.execute(select(samples).order_by(samples.c.id.desc()).limit(series_points)).all()
            per_user = conn.execute(self._per_user_query(user)).all()
            running_rows = conn.execute(self._running_energy_query(user)).all()
            decisions = conn.execute(
                select(events)
                .where(events.c.kind.in_(("decision", "policy-changed", "policy-error")))
                .order_by(events.c.id.desc())
                .limit(15)
            ).all()
        rows = list(reversed(rows))
        last = rows[-1] if rows else None
        # The cluster's figures as the loop sees them now (as the per-user ones), else the last sample's.
        totals = self.live_totals() or (
            {"power_w": last.power_w, "energy_j": last.energy_j, "cost": last.cost}
            if last
            else {"power_w": 0.0, "energy_j": 0.0, "cost": 0.0}
        )
        return {
            "user": {"name": user.name, "admin": user.admin},
            "now": time.time(),
            "policy": self.policy(),
            "queue": waiting,
            "running": running,
            "recent": recent,
            "nodes": self.nodes_out(user),
            "users": self._users_out(per_user, running_rows),
            "totals": {
                "power_w": totals["power_w"],
                "energy_j": totals["energy_j"],
                "energy_kwh": totals["energy_j"] / 3.6e6,
                "cost": totals["cost"],
                "currency": self.currency,
                "gpus": sum(n.num_gpus for n in self.nodes),
            },
            "decisions": [
                {"id": r.id, "at": r.at, "kind": r.kind, "detail": json.loads(r.detail or "{}")} for r in decisions
            ],
            "series": [{"at": r.at, "busy": json.loads(r.busy), "power_w": r.power_w} for r in rows],
        }

    def _users_out(self, per_user: Sequence[Row[Any]], running: Sequence[Row[Any]]) -> list[dict[str, Any]]:
        """Per-user totals, a running job's energy and cost counted up to now (not only to its last attempt)."""
        out = {r.name: dict(r._mapping) for r in per_user}
        for r in running:
            entry = out.get(r.name)
            if entry is None:
                continue
            energy_j, cost = self._live_energy(r.id, r.energy_j, r.cost)
            entry["energy_j"] = (entry["energy_j"] or 0.0) + energy_j - r.energy_j
            entry["cost"] = (entry["cost"] or 0.0) + cost - r.cost
        return list(out.values())

    def _running_energy_query(self, user: User) -> Select[Any]:
        query = (
            select(jobs.c.id, users.c.name, jobs.c.energy_j, jobs.c.cost)
            .select_from(users.join(jobs, jobs.c.user_id == users.c.id))
            .where(jobs.c.state.in_(RUNNING))
        )
        return query if user.admin else query.where(users.c.id == user.id)

    def _per_user_query(self, user: User) -> Select[Any]:
        def count(states: tuple[str, ...]) -> ColumnElement[Any]:
            return func.sum(case((jobs.c.state.in_(states), 1), else_=0))

        query = (
            select(
                users.c.name,
                count(WAITING).label("waiting"),
                count(("running", "checkpointing")).label("running"),
                func.sum(case((jobs.c.state.in_(("running", "checkpointing")), jobs.c.gpus), else_=0)).label("gpus"),
                count(("done",)).label("done"),
                func.sum(jobs.c.energy_j).label("energy_j"),
                func.sum(jobs.c.cost).label("cost"),
            )
            .select_from(users.join(jobs, jobs.c.user_id == users.c.id))
            .group_by(users.c.name)
            .order_by(users.c.name)
        )
        return query if user.admin else query.where(users.c.id == user.id)


_ADAPTIVE_HINT = (
    "submit jobs with batch_size, max_batch_size, min_local_bsz and max_local_bsz (their agents pick their batches)"
)


def _decides_on_agents(name: str | None) -> bool:
    """Whether the policy decides on the jobs' agents alone (pollux, sia): then every job must be adaptive."""
    from gpuweave.cluster.policies import POLICIES

    return name is not None and name in POLICIES and bool(getattr(POLICIES.get(name).impl, "decides_on_agents", False))
