"""The HTTP side of the service (FastAPI): the REST API under ``/api/v1``, ``/metrics``, the dashboard at ``/``.

Every ``/api/v1`` call needs ``Authorization: Bearer TOKEN`` (401 without a valid one). Errors are JSON
``{"detail": one line, "field": the field it is about}``: 404 for a job that is not the caller's, 403 for an
admin-only call, 409 for a job that is already over, 413 for a body over ``max_body_bytes``, 422 for a field that
is invalid (pydantic's checks, an unknown job type, a job that can never fit), 429 for a quota. The OpenAPI schema
is at ``/openapi.json`` (the interactive docs page is off: it would load scripts from the network).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gpuweave import __version__
from gpuweave.cluster.policies import check_runs_anywhere, make_policy, policy_names
from gpuweave.errors import InputError
from gpuweave.service import schemas
from gpuweave.service.auth import User, user_for_token
from gpuweave.service.health import FAILED, READY, RETRY_AFTER_S, STARTING
from gpuweave.service.store import ApiError, Store

if TYPE_CHECKING:
    from gpuweave.service.metrics import ServiceMetrics
    from gpuweave.service.scheduler import Scheduler

STATIC = Path(__file__).parent / "static"
MAX_ID = 2**31 - 1
log = logging.getLogger("gpuweave.service.api")

JobId = Annotated[int, PathParam(ge=1, le=MAX_ID, description="the job's id")]
FILTER = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


@dataclass
class ServiceState:
    store: Store
    metrics: ServiceMetrics
    scheduler: Scheduler | None = None  # None: the API alone (tests of the HTTP side)
    seed: int = 0
    max_body_bytes: int = 64 * 1024
    #: STARTING while ``gpuweave serve`` recovers from the last run (the port is open, /healthz answers 503 and
    #: /api/v1 503 "starting"), READY once the scheduling loop runs, FAILED if the recovery failed
    phase: str = READY


def create_app(state: ServiceState) -> FastAPI:
    app = FastAPI(
        title="gpuweave",
        version=__version__,
        description="GPU cluster scheduling service: submit jobs, watch the policy place them.",
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = state
    _error_handlers(app)
    app.add_middleware(StartingGate, state=state)
    app.add_middleware(RequestLog, metrics=state.metrics)
    app.add_middleware(BodyLimit, max_bytes=state.max_body_bytes)
    app.include_router(_api(state))
    _plain_routes(app, state)
    _document_choices(app, state.store)
    return app


def _document_choices(app: FastAPI, store: Store) -> None:
    """The schema lists this service's job types, GPU types and policies as the allowed values of those fields
    (what clients and fuzzers then generate); the checks in :mod:`gpuweave.service.jobs` stay the authority."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            fields = schema["components"]["schemas"]["JobSubmit"]["properties"]
            fields["job_type"]["enum"] = list(store.profiles.job_types())
            models = sorted({n.gpu_model for n in store.nodes})
            items = fields["gpu_types"]["anyOf"][0]["items"]
            items["enum"] = models

            schema["components"]["schemas"]["PolicyIn"]["properties"]["name"]["enum"] = policy_names()
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's way to customise the schema


# ---------------------------------------------------------------------------------------------------- errors
def _error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"detail": exc.detail, "field": exc.field}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
        loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "header")]
        field = ".".join(loc) or None
        detail = f"{field}: {first.get('msg')}" if field else str(first.get("msg"))
        safe = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg")), "type": e.get("type")} for e in errors
        ]
        return JSONResponse({"detail": detail, "field": field, "errors": safe}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = getattr(exc, "headers", None)
        return JSONResponse({"detail": str(exc.detail), "field": None}, status_code=exc.status_code, headers=headers)


class BodyLimit:
    """413 for a request body over ``max_bytes``, declared (Content-Length) or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            response = JSONResponse(
                {"detail": f"request body over {self.max_bytes} bytes", "field": "body"}, status_code=413
            )
            return await response(scope, receive, send)
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise HTTPException(413, f"request body over {self.max_bytes} bytes")
            return message

        return await self.app(scope, limited, send)


class StartingGate:
    """503 ``starting`` for ``/api/v1`` while the service recovers from its last run (``ServiceState.phase``).

    ``/healthz``, ``/metrics`` and the dashboard's files answer at once (the dashboard then shows "starting")."""

    def __init__(self, app: ASGIApp, state: ServiceState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        phase = self.state.phase
        if scope["type"] == "http" and phase != READY and str(scope.get("path", "")).startswith("/api/"):
            detail = (
                "starting: the service is recovering from its last run; retry shortly"
                if phase == STARTING
                else "the service failed to start"
            )
            response = JSONResponse(
                {"detail": detail, "field": None}, status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)}
            )
            return await response(scope, receive, send)
        return await self.app(scope, receive, send)


class RequestLog:
    """One JSON log line and one latency observation per request (route template, not the raw path)."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics | None) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()
        status = {"code": 500}

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            seconds = time.perf_counter() - start
            route = getattr(scope.get("route"), "path", "unmatched")
            if self.metrics is not None:
                self.metrics.api_seconds.labels(scope["method"], route, str(status["code"])).observe(seconds)
            log.info(
                "request",
                extra={
                    "fields": {
                        "method": scope["method"],
                        "path": scope["path"],
                        "route": route,
                        "status": status["code"],
                        "ms": round(seconds * 1000, 3),
                    }
                },
            )


# ---------------------------------------------------------------------------------------------------- auth
_bearer = HTTPBearer(auto_error=False, description="a token from `gpuweave serve token create NAME`")


def _user(request: Request, creds: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> User:
    if creds is None or creds.scheme.lower() != "bearer":
        raise HTTPException(401, "missing bearer token", headers={"WWW-Authenticate": "Bearer"})
    user = user_for_token(request.app.state.service.store.engine, creds.credentials)
    if user is None:
        raise HTTPException(401, "invalid or revoked token", headers={"WWW-Authenticate": "Bearer"})
    return user


def _admin(user: User = Depends(_user)) -> User:
    if not user.admin:
        raise ApiError(403, "admins only", None)
    return user


# ---------------------------------------------------------------------------------------------------- routes
def _api(state: ServiceState) -> APIRouter:
    store = state.store
    errors: dict[int | str, dict[str, Any]] = {401: {"model": schemas.Problem}, 422: {"model": schemas.Problem}}
    router = APIRouter(prefix="/api/v1", responses=errors)

    @router.post("/jobs", status_code=201, response_model=schemas.Job, responses={403: {}, 429: {}}, tags=["jobs"])
    def submit(spec: schemas.JobSubmit, user: User = Depends(_user)) -> dict[str, Any]:
        """Submit a job; it waits in the queue until the policy starts it."""
        out = store.submit(user, spec)
        if state.metrics is not None:
            state.metrics.submissions.inc()
        return out

    @router.get("/jobs", response_model=schemas.JobList, tags=["jobs"])
    def list_jobs(
        user: User = Depends(_user),
        state_: Annotated[list[schemas.State] | None, Query(alias="state", max_length=7)] = None,
        owner: Annotated[str | None, Query(alias="user", pattern=FILTER)] = None,
        name: Annotated[str | None, Query(pattern=FILTER)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
    ) -> dict[str, Any]:
        """Jobs you can see (yours; every job for an admin), newest first, filtered by state, user and name."""
        return store.list_jobs(user, state=state_, owner=owner, name=name, limit=limit, offset=offset)

    @router.get("/jobs/{job_id}", response_model=schemas.JobDetail, responses={404: {}}, tags=["jobs"])
    def get_job(job_id: JobId, user: User = Depends(_user)) -> dict[str, Any]:
        """One job with its history of placements (one entry per attempt)."""
        return store.job(user, job_id, history=True)

    @router.post("/jobs/{job_id}/cancel", response_model=schemas.Job, responses={404: {}, 409: {}}, tags=["jobs"])
    def cancel(job_id: JobId, user: User = Depends(_user)) -> JSONResponse:
        """Cancel a job: a waiting one at once (200), a running one when its workers have ended (202)."""
        out, status = store.cancel(user, job_id)
        return JSONResponse(schemas.Job(**out).model_dump(mode="json"), status_code=status)

    @router.get("/nodes", response_model=list[schemas.Node], tags=["cluster"])
    def nodes(user: User = Depends(_user)) -> list[dict[str, Any]]:
        """Nodes with their GPUs and what runs on them (other users' jobs without names)."""
        return store.nodes_out(user)

    @router.get("/job-types", response_model=list[str], tags=["cluster"])
    def job_types(_user_: User = Depends(_user)) -> list[str]:
        """The profile store's job types (``job_type`` of a submission)."""
        return list(store.profiles.job_types())

    @router.get("/events", response_model=list[schemas.Event], tags=["cluster"])
    def event_log(
        user: User = Depends(_user),
        after: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
        job_id: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> list[dict[str, Any]]:
        """The event log after event ``after`` (yours; everything for an admin), oldest first."""
        return store.events_out(user, after=after, job_id=job_id, limit=limit)

    @router.get("/me", response_model=schemas.Me, tags=["users"])
    def me(user: User = Depends(_user)) -> dict[str, Any]:
        """Who the token belongs to, the quotas and what counts against them."""
        return store.me(user)

    @router.get("/dashboard", tags=["cluster"])
    def dashboard(user: User = Depends(_user)) -> dict[str, Any]:
        """Everything the dashboard shows, in one answer."""
        return store.dashboard(user)

    _policy_routes(router, state)
    return router


def _policy_routes(router: APIRouter, state: ServiceState) -> None:
    store = state.store

    def shown(value: dict[str, Any]) -> dict[str, Any]:
        return {**value, "available": policy_names()}

    @router.get("/policy", response_model=schemas.Policy, tags=["policy"])
    def get_policy(_user_: User = Depends(_user)) -> dict[str, Any]:
        """The policy in force and its options."""
        return shown(store.policy())

    @router.put("/policy", response_model=schemas.Policy, responses={403: {}}, tags=["policy"])
    def put_policy(body: schemas.PolicyIn, user: User = Depends(_admin)) -> dict[str, Any]:
        """Change the policy or its options (admins); the scheduling loop switches at its next sync."""
        options = dict(body.options)
        round_length = options.pop("round_length", None)
        try:
            check_runs_anywhere(body.name, "the service", adaptive=True)  # then adaptive jobs only (store.set_policy)
            policy = make_policy(body.name, round_length=round_length, seed=state.seed, **options)
        except InputError as exc:
            field = "name" if exc.field == "policy" else "options"
            raise ApiError(422, exc.message, field) from None
        except Exception as exc:  # a policy's own check of an option it was handed
            raise ApiError(422, f"options rejected by policy {body.name!r}: {exc}".splitlines()[0], "options") from None
        return shown(store.set_policy(user, body.name, options, policy.round_length if round_length else None))


def _plain_routes(app: FastAPI, state: ServiceState) -> None:
    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get(
        "/healthz",
        tags=["service"],
        response_model=schemas.Health,
        responses={503: {"model": schemas.Health, "description": "starting (recovering) or failed"}},
    )
    def healthz() -> JSONResponse:
        """Readiness: 200 ``{"status": "ok"}`` once the scheduling loop runs; 503 with ``"starting"`` while the
        service recovers from its last run (the port opens first), or ``"failed"`` if the loop has stopped."""
        alive = state.scheduler.alive if state.scheduler is not None else None
        status = state.phase
        if status == READY and alive is False:
            status = FAILED
        body = {"status": status, "ok": status == READY, "scheduler": alive, "version": __version__}
        return JSONResponse(body, status_code=200 if status == READY else 503)

    @app.get("/metrics", tags=["service"], response_class=Response)
    def metrics() -> Response:
        """Prometheus text format."""
        return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
