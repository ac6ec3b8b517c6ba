"""A small A2A agent made with the official Python SDK (a2a-sdk, pinned by
scripts/a2a-peers/requirements.txt), for tests/a2a.rs.

    python scripts/a2a_agent.py --mode echo [--token VALUE] [--log FILE] [--legacy]

Listens on a free port of 127.0.0.1 and prints `PORT <n>` once it does. Modes:

- echo: a task that completes at once, with a text artifact `echo.txt` (the request's
  text, prefixed `echo: `) and a file artifact `report.csv`;
- slow: a task that works for --delay seconds (working), then completes like echo;
- never: a task that works until it is canceled;
- fails: a task that fails with the status message `the agent could not do it`;
- input-required: a task that asks `Which inbox?`, waits for an answer, and completes
  with `inbox: ANSWER`;
- message: no task, a single message answering `echo: …`.

--token: requests whose Authorization header is not exactly this are refused with 401.
--log: lines `auth <header>` and `method <JSON-RPC method>` (each request to the
endpoint), `request <text>` (each message's text, its parts joined by `|`) and
`cancel <task id>` (the executor canceled) are appended here.
--legacy: the card offers only a protocol 0.3 JSON-RPC interface (method names
`message/send`…), served by the SDK's 0.3 compatibility layer.
"""

import argparse
import asyncio
import json
import socket
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse

from a2a.helpers.proto_helpers import (
    get_message_text,
    new_raw_part,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes.agent_card_routes import create_agent_card_routes
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Role,
    Task,
    TaskState,
    TaskStatus,
)


def log(path, line):
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line.replace("\n", " ") + "\n")


class Agent(AgentExecutor):
    def __init__(self, mode, delay, log_path):
        self.mode = mode
        self.delay = delay
        self.log_path = log_path

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        text = "|".join(p.text for p in message.parts if p.HasField("text"))
        log(self.log_path, f"request {text}")
        if self.mode == "message":
            await event_queue.enqueue_event(
                new_text_message(
                    f"echo: {get_message_text(message)}",
                    context_id=context.context_id,
                    role=Role.ROLE_AGENT,
                )
            )
            return
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[message],
                )
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if self.mode == "fails":
            await updater.failed(self.agent_text(context, "the agent could not do it"))
            return
        if self.mode == "input-required" and context.current_task is None:
            await updater.requires_input(self.agent_text(context, "Which inbox?"))
            return
        if self.mode == "input-required":
            # The user's answer to the question: the task completes with it.
            await updater.add_artifact(
                [new_text_part(f"inbox: {get_message_text(message)}")], name="answer.txt"
            )
            await updater.complete()
            return
        await updater.start_work()
        if self.mode == "never":
            await asyncio.Event().wait()
        if self.mode == "slow":
            await asyncio.sleep(self.delay)
        await updater.add_artifact(
            [new_text_part(f"echo: {get_message_text(message)}")], name="echo.txt"
        )
        await updater.add_artifact(
            [new_raw_part(b"a,b\n1,2\n", media_type="text/csv", filename="report.csv")],
            name="report",
        )
        await updater.complete()

    def agent_text(self, context, text):
        return new_text_message(
            text,
            context_id=context.context_id,
            task_id=context.task_id,
            role=Role.ROLE_AGENT,
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        log(self.log_path, f"cancel {context.task_id}")
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


class Auth:
    """Refuses requests without the expected Authorization header; logs each one's, and
    the JSON-RPC method it calls."""

    def __init__(self, app, token, log_path):
        self.app = app
        self.token = token
        self.log_path = log_path

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            value = headers.get(b"authorization", b"").decode("latin-1")
            log(self.log_path, f"auth {value}")
            body, more = b"", True
            while more:
                message = await receive()
                body += message.get("body", b"")
                more = message.get("more_body", False)
            try:
                method = json.loads(body).get("method")
            except (ValueError, AttributeError):
                method = None
            log(self.log_path, f"method {method}")
            if self.token is not None and value != self.token:
                await JSONResponse({"error": "unauthorized"}, status_code=401)(
                    scope, receive, send
                )
                return
            replay = [{"type": "http.request", "body": body, "more_body": False}]

            async def receive_again():
                return replay.pop() if replay else await receive()

            await self.app(scope, receive_again, send)
            return
        await self.app(scope, receive, send)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--mode",
        choices=["echo", "slow", "never", "fails", "input-required", "message"],
        default="echo",
    )
    parser.add_argument("--delay", type=float, default=0.3)
    parser.add_argument("--token")
    parser.add_argument("--log")
    parser.add_argument("--legacy", action="store_true")
    args = parser.parse_args()

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Inherited by each accepted connection: uvicorn writes a response's head and body
    # apart, and with Nagle's algorithm the body of every answer after a connection's
    # first waits out the client's delayed ACK (40 ms), which would be measured as ours.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before the port is printed: a client that connects at once waits in the
    # backlog for the server to start instead of being refused.
    sock.listen(128)
    port = sock.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}/a2a"
    version = "0.3" if args.legacy else "1.0"
    card = AgentCard(
        name="nightshift test agent",
        description=f"An agent for nightshift's tests ({args.mode})",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=endpoint, protocol_binding="JSONRPC", protocol_version=version)
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id=args.mode,
                name=args.mode,
                description="answers for tests",
                tags=["test"],
            )
        ],
    )
    handler = DefaultRequestHandler(
        agent_executor=Agent(args.mode, args.delay, args.log),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(
        handler, rpc_url="/a2a", enable_v0_3_compat=args.legacy
    )
    app = Auth(Starlette(routes=routes), args.token, args.log)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    print(f"PORT {port}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
