"""Checks one run's event stream (`GET /v1/runs/{id}/events`) against the OpenAPI document,
event by event, with schemathesis's own response check: the fuzzer reaches that stream only
when a run happens to exist, so scripts/api-fuzz.sh starts one and checks it here.

Usage: sse_conformance.py BASE_URL TOKEN RUN_ID
"""

import sys

import schemathesis
from schemathesis.specs.openapi.checks import response_schema_conformance

base, token, run_id = sys.argv[1:4]
schema = schemathesis.openapi.from_url(f"{base}/v1/openapi.json")
operation = schema["/v1/runs/{run_id}/events"]["GET"]
case = operation.Case(
    path_parameters={"run_id": run_id},
    headers={"Authorization": f"Bearer {token}"},
)
response = case.call(base_url=base)
if response.status_code != 200 or b"id: 1\n" not in response.content:
    sys.exit(f"sse-conformance: expected a stream from its first event, got "
             f"{response.status_code}: {response.content[:200]!r}")
case.validate_response(response, checks=[response_schema_conformance])
print(f"sse-conformance: run {run_id}'s events are as the document describes them")
