"""An SMTP server for the email channel's tests (`aiosmtpd` from PyPI, pinned in
scripts/a2a-peers/requirements.txt): it takes mail on 127.0.0.1 with AUTH PLAIN/LOGIN
(one user and password; anything else is refused with 535), reads each message with
Python's own email parser, and writes one JSON line per message to --log: the envelope,
the headers, and the text and HTML parts. It prints its port on its first line.

Usage: smtp_receiver.py --log L --user U --password P [--refuse-rcpt ADDRESS]
  --refuse-rcpt: answer 550 (a permanent refusal) to mail for this address.
"""

import argparse
import json
import logging
import socket
import time
import warnings
from email import policy
from email.parser import BytesParser

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

parser = argparse.ArgumentParser()
parser.add_argument("--log", required=True)
parser.add_argument("--user", required=True)
parser.add_argument("--password", required=True)
parser.add_argument("--refuse-rcpt", default=None)
args = parser.parse_args()
# Logins without TLS are what this server is for (a test on 127.0.0.1): no warning.
warnings.filterwarnings("ignore", message="Requiring AUTH while not requiring TLS")
logging.getLogger("mail.log").setLevel(logging.ERROR)


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = (isinstance(auth_data, LoginPassword)
          and auth_data.login.decode() == args.user
          and auth_data.password.decode() == args.password)
    # Not handled here: the server answers a failure with 535 itself.
    return AuthResult(success=ok, handled=False)


class Handler:
    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address == args.refuse_rcpt:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        message = BytesParser(policy=policy.default).parsebytes(envelope.content)
        text = message.get_body(preferencelist=("plain",))
        html = message.get_body(preferencelist=("html",))
        with open(args.log, "a") as log:
            log.write(json.dumps({
                "authenticated": session.authenticated,
                "mail_from": envelope.mail_from,
                "rcpt_tos": envelope.rcpt_tos,
                "from": str(message["from"]),
                "to": str(message["to"]),
                "subject": str(message["subject"]),
                "message_id": str(message["message-id"]),
                "content_type": message.get_content_type(),
                "text": text.get_content() if text else None,
                "html": html.get_content() if html else None,
            }) + "\n")
        return "250 Message accepted"


with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
controller = Controller(
    Handler(), hostname="127.0.0.1", port=port,
    authenticator=authenticator, auth_require_tls=False, auth_required=True)
controller.start()
print(port, flush=True)
while True:
    time.sleep(3600)
