"""API fuzz from the OpenAPI schema (schemathesis): no input gives a 5xx, and every answer matches the schema.

Every operation is called with generated valid and invalid input, as an admin (the widest access), on a service
whose scheduling loop runs (submissions start real synthetic workers). ``GPUWEAVE_FUZZ_EXAMPLES`` sets the
examples per operation (default 40; CI runs derandomized).
"""

from __future__ import annotations

import os

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error, response_schema_conformance  # noqa: E402

from tests.service.helpers import auth, token  # noqa: E402

EXAMPLES = int(os.environ.get("GPUWEAVE_FUZZ_EXAMPLES", "40"))


@pytest.fixture
def fuzzed(make_service, sqlite_url):
    service, _client = make_service(sqlite_url, default_max_queued_jobs=500)
    service.fuzz_token = token(sqlite_url, "root", admin=True)
    return service


def test_no_input_gives_a_server_error(fuzzed):
    """Each operation of /openapi.json, ``EXAMPLES`` generated cases (positive and negative) each."""
    from hypothesis import given

    api = schemathesis.openapi.from_asgi("/openapi.json", fuzzed.app)
    headers = auth(fuzzed.fuzz_token)
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) >= 10
    seen: dict[str, set[int]] = {}

    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    for operation, mode in ((op, mode) for op in operations for mode in modes):

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def call(case):
            response = case.call(headers=headers)
            seen.setdefault(f"{mode.value} {operation.label}", set()).add(response.status_code)
            assert response.status_code < 500, f"{operation.label}: {response.status_code} {response.text}"
            case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])

        try:
            call()
        except Unsatisfiable:  # no parameters, no body: nothing to make invalid
            assert mode == GenerationMode.NEGATIVE
            seen[f"{mode.value} {operation.label}"] = set()
    assert len(seen) == 2 * len(operations)
    assert 201 in seen["positive POST /api/v1/jobs"] and 200 in seen["positive PUT /api/v1/policy"]
