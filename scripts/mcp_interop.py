"""The official Python MCP SDK (pinned by scripts/mcp-interop.sh) against nightshift, over
streamable HTTP with a bearer token and over stdio: initialize, page through the tools,
call each one (the SDK checks every structured result against the tool's outputSchema),
read each resource, and see bad input come back as a tool error.

Usage: mcp_interop.py URL TOKEN NIGHTSHIFT_BINARY DB_PATH
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

EXPECTED_TOOLS = {
    "memory_search", "memory_save", "memory_update", "memory_delete", "memory_append",
    "memory_recall", "memory_context", "schedule_add", "schedule_list", "schedule_show",
    "schedule_edit", "schedule_pause", "schedule_resume", "schedule_delete", "schedule_runs",
    "schedule_run_now", "schedule_trigger", "schedule_backfill",
    "state_get", "state_set", "state_delete", "state_list", "memory_history", "memory_restore",
    "approval_list", "approval_decide", "schedule_run_cancel", "schedule_run_rerun",
    "schedule_run_events",
}


def check(condition, what):
    if not condition:
        raise SystemExit(f"mcp-interop: FAILED: {what}")


async def ok(session, tool, arguments):
    result = await session.call_tool(tool, arguments)
    text = " ".join(c.text for c in result.content if getattr(c, "text", None))
    check(not result.is_error, f"{tool} failed: {text}")
    check(result.structured_content is not None, f"{tool} has structured content")
    return result.structured_content


async def wait_for_a_run(session):
    """A trigger that waits for its run (the worker's; no runtime configured, so it fails
    at once): each step comes as a progress notification, in order, and the answer is the
    run as it ended. A wait past the request timeout is refused, naming wait_secs."""
    added = await ok(session, "schedule_add", {"goal": "answer at once", "triggered": True, "max_attempts": 1})
    sid = added["schedule_id"]
    told = []

    async def on_progress(progress, total, message):
        told.append((progress, message))

    result = await session.call_tool(
        "schedule_trigger", {"schedule_id": sid, "input": "now", "wait_secs": 20},
        progress_callback=on_progress)
    text = " ".join(c.text for c in result.content if getattr(c, "text", None))
    check(not result.is_error, f"trigger and wait: {text}")
    run = result.structured_content["run"]
    check(run is not None and run["status"] == "failed", f"trigger and wait: the run ended: {run}")
    steps = [p for p, _ in told]
    check(len(told) >= 2 and steps == sorted(set(steps)), f"trigger and wait: progress in order: {told}")
    check(told[-1][1].startswith("ended failed"), f"trigger and wait: the last step is the end: {told}")
    too_long = await session.call_tool("schedule_trigger", {"schedule_id": sid, "wait_secs": 100000})
    text = " ".join(c.text for c in too_long.content if getattr(c, "text", None))
    check(too_long.is_error and "wait_secs" in text, f"a wait too long is refused: {text}")
    await ok(session, "schedule_delete", {"schedule_id": sid})


async def exercise(session, label):
    init = await session.initialize()
    check(init.server_info.name == "nightshift", f"{label}: server name")
    pages, cursor, names = 0, None, []
    while True:
        from mcp.types import PaginatedRequestParams
        listed = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        pages += 1
        names += [t.name for t in listed.tools]
        cursor = listed.next_cursor
        if not cursor:
            break
    check(set(names) == EXPECTED_TOOLS and len(names) == len(EXPECTED_TOOLS), f"{label}: tools {names}")
    # Every tool on the first page: some clients never follow a cursor.
    check(pages == 1, f"{label}: tools/list took {pages} pages")

    saved = await ok(session, "memory_save", {"text": f"{label} likes green tea", "tags": ["drink"]})
    note = saved["note_id"]
    await ok(session, "memory_update", {"note_id": note, "text": f"{label} likes white tea"})
    found = await ok(session, "memory_search", {"query": "white tea", "top_k": 3})
    check(found["hits"] and found["hits"][0]["note_id"] == note, f"{label}: search finds the note")
    await ok(session, "memory_append", {"session": f"{label}-chat", "role": "user", "text": "hello there"})
    await ok(session, "memory_recall", {"session": f"{label}-chat", "limit": 5})
    await ok(session, "memory_context", {"session": f"{label}-chat", "budget": 400, "strategy": "all"})
    history = await ok(session, "memory_history", {"note_id": note})
    check(len(history["versions"]) == 2, f"{label}: a note's history has its two versions")
    restored = await ok(session, "memory_restore", {"note_id": note, "version": 1})
    check(restored["content"] == f"{label} likes green tea", f"{label}: restore brings version 1 back")
    await ok(session, "state_set", {"key": "user:theme", "value": "dark"})
    entry = await ok(session, "state_set", {"key": "draft", "session": f"{label}-chat", "value": {"step": 1}})
    got = await ok(session, "state_get", {"key": "draft", "session": f"{label}-chat"})
    check(got["value"] == {"step": 1} and got["version"] == entry["version"], f"{label}: state round trip")
    listed = await ok(session, "state_list", {"prefix": "user:"})
    check([e["key"] for e in listed["entries"]] == ["user:theme"], f"{label}: state list")
    await ok(session, "state_delete", {"key": "user:theme"})
    added = await ok(session, "schedule_add", {"goal": "check the weather", "cron": "0 9 * * *", "tz": "Europe/Paris"})
    sid = added["schedule_id"]
    await ok(session, "schedule_list", {"limit": 10})
    await ok(session, "schedule_show", {"schedule_id": sid})
    edited = await ok(session, "schedule_edit", {"schedule_id": sid, "changes": {"cron": "30 9 * * *"}})
    check(edited["schedule_id"] == sid and "09:30" in edited["description"], f"{label}: edit in place")
    await ok(session, "schedule_pause", {"schedule_id": sid, "note": "away"})
    await ok(session, "schedule_resume", {"schedule_id": sid})
    await ok(session, "schedule_run_now", {"schedule_id": sid})
    trig = await ok(session, "schedule_trigger", {"schedule_id": sid, "input": "hi", "idempotency_key": f"{label}-1"})
    again = await ok(session, "schedule_trigger", {"schedule_id": sid, "idempotency_key": f"{label}-1"})
    check(again["deduplicated"] and again["event_id"] == trig["event_id"], f"{label}: idempotent trigger")
    if label == "http":
        await wait_for_a_run(session)
    await ok(session, "schedule_backfill", {"schedule_id": sid, "from": "2020-01-01", "to": "2020-01-02", "dry_run": True})
    await ok(session, "schedule_runs", {"schedule_id": sid})
    await ok(session, "schedule_delete", {"schedule_id": sid})
    await ok(session, "memory_delete", {"note_id": note})

    bad = await session.call_tool("memory_save", {"text": ""})
    check(bad.is_error, f"{label}: empty text is a tool error")
    resources = await session.list_resources()
    uris = [str(r.uri) for r in resources.resources]
    check("nightshift://notes" in uris and "nightshift://schedules" in uris, f"{label}: resources {uris}")
    for uri in uris:
        read = await session.read_resource(uri)
        check(read.contents, f"{label}: {uri} has contents")
    notes = await session.read_resource("nightshift://notes")
    check(json.loads(notes.contents[0].text) == [], f"{label}: the deleted note is gone")
    templates = await session.list_resource_templates()
    check(templates.resource_templates, f"{label}: a resource template")
    await session.send_ping()
    print(f"mcp-interop: {label}: {len(names)} tools called, {len(uris)} resources read")


async def main():
    url, token, binary, db = sys.argv[1:5]
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await exercise(session, "http")
    params = StdioServerParameters(
        command=binary, args=["mcp", "--user", "stdio-user"], env={"NIGHTSHIFT_DB": db}
    )
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await exercise(session, "stdio")


asyncio.run(main())
