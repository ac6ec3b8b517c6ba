#!/usr/bin/env python3
"""Reproduces sqld 0.24.33's write-lock stall without nightshift.

Usage: sqld --db-path /tmp/stall --http-listen-addr 127.0.0.1:8080 &
       python3 scripts/sqld-write-stall.py http://127.0.0.1:8080 [WRITERS=12] [SECONDS=120]

Writers commit small transactions over Hrana (HTTP) as fast as they can, on a WAL kept
above SQLite's autocheckpoint threshold (a reader holds a snapshot, again and again), so
commits also checkpoint. Exits 0 when writes kept completing for SECONDS, and 3 when none
completed for 15 s: then reads still answer, every write waits forever and sqld spins on
its cores. With sqld's debug log on (RUST_LOG=libsql_server::connection::connection_manager=debug)
the log shows why: a checkpoint that waited in sqld's write-lock queue gave up and its
connection closed, yet it was still in the queue; the next holder handed the lock to it
("unparking id=N"), and the slot stays "Notified" to a connection that is gone while every
other writer loops on it. Only a restart of sqld clears it. Python standard library only.
scripts/sqld-write-stall.log is such a log, from nightshift's scale-out test.
"""
import json
import random
import sys
import threading
import time
import urllib.request

URL = sys.argv[1]
WRITERS = int(sys.argv[2]) if len(sys.argv) > 2 else 12
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 120
STALLED_AFTER = 15


def pipeline(baton, statements, close=False, timeout=60):
    requests = [{"type": "execute", "stmt": {"sql": sql}} for sql in statements]
    if close:
        requests.append({"type": "close"})
    body = json.dumps({"baton": baton, "requests": requests}).encode()
    request = urllib.request.Request(
        URL + "/v2/pipeline", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


pipeline(None, ["CREATE TABLE IF NOT EXISTS h (id INTEGER PRIMARY KEY, k INTEGER, v BLOB)"], close=True)
for _ in range(6):  # about 6 MB: well above the 1,000-page autocheckpoint threshold
    pipeline(None, [
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500) "
        "INSERT INTO h (k, v) SELECT x, randomblob(2000) FROM c"
    ], close=True)

lock = threading.Lock()
state = {"done": 0, "errors": 0, "last": time.time(), "stop": False}


def writer():
    while not state["stop"]:
        k = random.randint(1, 500)
        kind = random.random()
        try:
            if kind < 0.4:
                out = pipeline(None, [f"UPDATE h SET v = randomblob(2000) WHERE k = {k}"], close=True)
            elif kind < 0.8:
                out = pipeline(None, [
                    "BEGIN",
                    f"UPDATE h SET v = randomblob(1500) WHERE k = {k}",
                    f"INSERT INTO h (k, v) VALUES ({k}, randomblob(500))",
                    "COMMIT",
                ], close=True)
            else:
                began = pipeline(None, ["BEGIN IMMEDIATE", f"SELECT count(*) FROM h WHERE k = {k}"])
                out = pipeline(began["baton"], [
                    f"DELETE FROM h WHERE id IN (SELECT id FROM h WHERE k = {k} LIMIT 1)",
                    "COMMIT",
                ], close=True)
            failed = any(r["type"] != "ok" for r in out["results"])
        except Exception:
            failed = True
        with lock:
            if failed:
                state["errors"] += 1
            else:
                state["done"] += 1
                state["last"] = time.time()


def reader():
    while not state["stop"]:
        try:
            began = pipeline(None, ["BEGIN", "SELECT count(*) FROM h"])
            time.sleep(2)
            pipeline(began["baton"], ["COMMIT"], close=True)
        except Exception:
            pass


for target in [writer] * WRITERS + [reader]:
    threading.Thread(target=target, daemon=True).start()
started = time.time()
while time.time() - started < SECONDS:
    time.sleep(1)
    idle = time.time() - state["last"]
    if idle > STALLED_AFTER:
        print(f"STALLED after {time.time() - started:.0f}s: no write completed for {idle:.0f}s "
              f"({state['done']} writes, {state['errors']} errors before)", flush=True)
        sys.exit(3)
state["stop"] = True
print(f"OK: {state['done']} writes, {state['errors']} errors in {SECONDS:.0f}s", flush=True)
