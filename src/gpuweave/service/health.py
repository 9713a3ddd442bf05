"""The service's phases, as ``GET /healthz`` names them (``status``).

``gpuweave serve`` opens its port before it recovers from the last run (stopping the workers a killed service
left, seconds per orphaned attempt): meanwhile ``/healthz`` answers 503 ``{"status": "starting"}`` and ``/api/v1``
503 "starting"; once the scheduling loop runs, 200 ``{"status": "ok"}``; 503 ``{"status": "failed"}`` if the loop
has stopped. 503 rather than 200 while starting, so that a supervisor or load balancer that only reads the code
sends no traffic to a service that cannot take it yet.
"""

from __future__ import annotations

STARTING = "starting"
READY = "ok"
FAILED = "failed"
#: seconds a client is told to wait (``Retry-After``) before it asks again while the service starts
RETRY_AFTER_S = 2
