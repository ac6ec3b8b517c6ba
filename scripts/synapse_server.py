"""A throwaway Matrix homeserver for the Matrix channel's tests: Synapse (pinned in
scripts/matrix-peer/requirements.txt) with a fresh config and SQLite database in --dir,
listening on 127.0.0.1 only, no federation, no rate limits. It registers a bot user
through the shared-secret admin API, makes a room, and prints one JSON line:
{"url", "token", "room"}; then it serves until it is killed (its Synapse with it).

Usage: synapse_server.py --dir DIR
"""

import argparse
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import yaml

parser = argparse.ArgumentParser()
parser.add_argument("--dir", required=True)
args = parser.parse_args()
data = os.path.abspath(args.dir)
os.makedirs(data, exist_ok=True)
config_path = os.path.join(data, "homeserver.yaml")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


subprocess.run(
    [
        sys.executable, "-m", "synapse.app.homeserver",
        "--server-name", "localhost",
        "--config-path", config_path,
        "--data-directory", data,
        "--generate-config", "--report-stats=no",
    ],
    check=True,
    stdout=subprocess.DEVNULL,
)
with open(config_path) as f:
    config = yaml.safe_load(f)
port = free_port()
config["listeners"] = [{
    "port": port,
    "bind_addresses": ["127.0.0.1"],
    "type": "http",
    "tls": False,
    "x_forwarded": False,
    "resources": [{"names": ["client"], "compress": False}],
}]
config["trusted_key_servers"] = []
config["suppress_key_server_warning"] = True
config["report_stats"] = False
config["enable_registration"] = False
unlimited = {"per_second": 10000, "burst_count": 10000}
for key in ("rc_message", "rc_registration", "rc_joins", "rc_invites", "rc_admin_redaction"):
    config[key] = unlimited
config["rc_login"] = {"address": unlimited, "account": unlimited, "failed_attempts": unlimited}
with open(config_path, "w") as f:
    yaml.safe_dump(config, f)
# Synapse's own log goes in --dir (the generated config puts it in the working directory).
with open(config["log_config"]) as f:
    log_config = yaml.safe_load(f)
for handler in log_config.get("handlers", {}).values():
    if "filename" in handler:
        handler["filename"] = os.path.join(data, "homeserver.log")
with open(config["log_config"], "w") as f:
    yaml.safe_dump(log_config, f)

server = subprocess.Popen(
    [sys.executable, "-m", "synapse.app.homeserver", "--config-path", config_path],
    stdout=subprocess.DEVNULL,
    stderr=open(os.path.join(data, "synapse.stderr"), "w"),
)


def stop(*_):
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
base = f"http://127.0.0.1:{port}"


def call(method, path, body=None, token=None):
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


deadline = time.time() + 120
while True:
    if server.poll() is not None:
        sys.exit(f"synapse exited with {server.returncode}; see {data}/synapse.stderr")
    try:
        call("GET", "/_matrix/client/versions")
        break
    except (urllib.error.URLError, ConnectionError):
        if time.time() > deadline:
            stop()
        time.sleep(0.2)

# The bot, through the shared-secret registration of Synapse's admin API.
secret = config["registration_shared_secret"].encode()
nonce = call("GET", "/_synapse/admin/v1/register")["nonce"]
user, password = "nightshift", "bot-password-1"
mac = hmac.new(secret, digestmod=hashlib.sha1)
mac.update(b"\x00".join([nonce.encode(), user.encode(), password.encode(), b"notadmin"]))
registered = call("POST", "/_synapse/admin/v1/register", {
    "nonce": nonce, "username": user, "password": password, "admin": False,
    "mac": mac.hexdigest(),
})
token = registered["access_token"]
room = call("POST", "/_matrix/client/v3/createRoom", {"name": "nightshift"}, token)["room_id"]
print(json.dumps({"url": base, "token": token, "room": room}), flush=True)
server.wait()
