"""A webhook receiver that verifies each delivery with the official Standard Webhooks
library (`standardwebhooks` from PyPI, pinned in scripts/a2a-peers/requirements.txt), as
a receiver following the scheme does: a bad signature or a stale or future timestamp is
refused (401), and a `webhook-id` it already accepted is a replay (409). It prints its
port on its first line, then writes one JSON line per request to --log: what it decided,
the headers and the body.

Usage: standard_webhook_receiver.py --secret-file F --log L [--fail-first N]
  --fail-first N: answer 503 to the first N deliveries that verify, so the sender retries.
"""

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

parser = argparse.ArgumentParser()
parser.add_argument("--secret-file", required=True)
parser.add_argument("--log", required=True)
parser.add_argument("--fail-first", type=int, default=0)
args = parser.parse_args()
webhook = Webhook(open(args.secret_file).read().strip())
accepted = set()
fail_first = [args.fail_first]


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0"))).decode()
        headers = {k.lower(): v for k, v in self.headers.items()}
        entry = {"headers": headers, "body": body}
        try:
            webhook.verify(body, headers)
            entry["verified"] = True
        except WebhookVerificationError as err:
            entry["verified"] = False
            entry["error"] = str(err)
        if not entry["verified"]:
            status = 401
        elif headers["webhook-id"] in accepted:
            entry["replay"] = True
            status = 409
        elif fail_first[0] > 0:
            fail_first[0] -= 1
            status = 503
        else:
            accepted.add(headers["webhook-id"])
            status = 204
        entry["status"] = status
        with open(args.log, "a") as log:
            log.write(json.dumps(entry) + "\n")
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *_):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
print(server.server_address[1], flush=True)
sys.stdout.close()
server.serve_forever()
