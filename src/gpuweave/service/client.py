"""A small client of the service's REST API (what ``gpuweave submit|jobs|cancel|nodes`` use).

The server comes from ``--server`` or ``GPUWEAVE_SERVER`` (default ``http://127.0.0.1:8765``), the token from
``GPUWEAVE_TOKEN``. Every failure is an :class:`~gpuweave.errors.InputError` with one line: the server's
``detail`` and the field it names, or why the server could not be reached.
"""

from __future__ import annotations

import os
from typing import Any

from gpuweave.errors import InputError
from gpuweave.service.config import DEFAULT_PORT

TOKEN_ENV = "GPUWEAVE_TOKEN"
SERVER_ENV = "GPUWEAVE_SERVER"
DEFAULT_SERVER = f"http://127.0.0.1:{DEFAULT_PORT}"
TIMEOUT_S = 30.0


class Client:
    def __init__(self, server: str | None = None, token: str | None = None) -> None:
        import httpx

        self.server = (server or os.environ.get(SERVER_ENV) or DEFAULT_SERVER).rstrip("/")
        if not self.server.startswith(("http://", "https://")):
            raise InputError(f"server {self.server!r} must start with http:// or https://", field="server")
        token = token if token is not None else os.environ.get(TOKEN_ENV, "")
        if not token:
            raise InputError(f"no token: set {TOKEN_ENV} (from `gpuweave serve token create NAME`)", field=TOKEN_ENV)
        self._http = httpx.Client(base_url=self.server, headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT_S)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """The response's JSON body."""
        import httpx

        try:
            response = self._http.request(method, f"/api/v1{path}", **kwargs)
        except httpx.HTTPError as exc:
            raise InputError(f"cannot reach the service at {self.server}: {exc}", field="server") from None
        if response.status_code >= 400:
            try:
                body = response.json()
                detail, field = body.get("detail", response.text), body.get("field")
            except ValueError:
                detail, field = response.text.strip()[:200] or response.reason_phrase, None
            raise InputError(f"{response.status_code}: {detail}", field=field)
        return response.json()

    def submit(self, spec: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = self.request("POST", "/jobs", json=spec)
        return body

    def jobs(self, **params: Any) -> dict[str, Any]:
        body: dict[str, Any] = self.request("GET", "/jobs", params={k: v for k, v in params.items() if v is not None})
        return body

    def job(self, job_id: int) -> dict[str, Any]:
        body: dict[str, Any] = self.request("GET", f"/jobs/{job_id}")
        return body

    def cancel(self, job_id: int) -> dict[str, Any]:
        body: dict[str, Any] = self.request("POST", f"/jobs/{job_id}/cancel")
        return body

    def nodes(self) -> list[dict[str, Any]]:
        body: list[dict[str, Any]] = self.request("GET", "/nodes")
        return body

    def close(self) -> None:
        self._http.close()
