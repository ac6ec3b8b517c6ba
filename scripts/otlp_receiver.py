"""An OTLP/HTTP trace receiver that decodes each export with the OpenTelemetry protocol's
own Python messages (`opentelemetry-proto` from PyPI, pinned in
scripts/a2a-peers/requirements.txt), as a collector does: a body that is not an
`ExportTraceServiceRequest` is refused (400). It prints its port on its first line, then
writes one JSON line per span received to --log: its trace, its id and its parent's (hex),
its name, kind, status, attributes and the service that sent it.

Usage: otlp_receiver.py --log L
"""

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

parser = argparse.ArgumentParser()
parser.add_argument("--log", required=True)
args = parser.parse_args()


def value(any_value):
    """An attribute's value as JSON: its one set field."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind is None:
        return None
    return getattr(any_value, kind)


def attributes(key_values):
    return {kv.key: value(kv.value) for kv in key_values}


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except Exception:  # a body the protocol cannot read
            self.send_response(400)
            self.end_headers()
            return
        with open(args.log, "a") as log:
            for resource_spans in request.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        log.write(json.dumps({
                            "service": resource.get("service.name"),
                            "scope": scope_spans.scope.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "name": span.name,
                            "kind": Span.SpanKind.Name(span.kind),
                            "status": Status.StatusCode.Name(span.status.code),
                            "status_message": span.status.message,
                            "attributes": attributes(span.attributes),
                        }) + "\n")
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
print(server.server_address[1], flush=True)
server.serve_forever()
