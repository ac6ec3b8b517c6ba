"""Signs a delivery the way its provider does, with the provider's own library (pinned in
scripts/a2a-peers/requirements.txt), for tests/sources.rs: the body is read from standard
input, and the headers a sender would add are printed as one JSON object.

Usage: sign_delivery.py SCHEME SECRET TIMESTAMP [MESSAGE_ID] < BODY
  stripe:   Stripe's SDK (`stripe.WebhookSignature`) -> Stripe-Signature: t=…,v1=…
  slack:    Slack's SDK (`slack_sdk.signature.SignatureVerifier`) -> X-Slack-Signature
            and X-Slack-Request-Timestamp
  standard: the Standard Webhooks library (`standardwebhooks.Webhook`) -> webhook-id,
            webhook-timestamp, webhook-signature
"""

import datetime
import json
import sys


def main() -> None:
    scheme, secret, timestamp = sys.argv[1], sys.argv[2], int(sys.argv[3])
    message_id = sys.argv[4] if len(sys.argv) > 4 else None
    body = sys.stdin.buffer.read().decode("utf-8")
    if scheme == "stripe":
        import stripe

        signature = stripe.WebhookSignature._compute_signature(f"{timestamp}.{body}", secret)
        headers = {"Stripe-Signature": f"t={timestamp},v1={signature}"}
    elif scheme == "slack":
        from slack_sdk.signature import SignatureVerifier

        verifier = SignatureVerifier(signing_secret=secret)
        headers = {
            "X-Slack-Request-Timestamp": str(timestamp),
            "X-Slack-Signature": verifier.generate_signature(
                timestamp=str(timestamp), body=body
            ),
        }
    elif scheme == "standard":
        from standardwebhooks.webhooks import Webhook

        at = datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc)
        headers = {
            "webhook-id": message_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": Webhook(secret).sign(message_id, at, body),
        }
    else:
        sys.exit(f"unknown scheme {scheme}")
    print(json.dumps(headers))


if __name__ == "__main__":
    main()
