// A hostile MCP server over stdio for tests/mcp_tools.rs: it initializes like any other,
// then misbehaves as its first argument says:
//   big        tools/call answers 1 MB of text
//   huge       tools/call answers 50 MB of text (past the client's 16 MiB line limit)
//   garbage    tools/call answers a line that is not JSON
//   dies       exits in the middle of tools/call
//   many-tools tools/list offers 10,000 tools
// Plain Node, no dependencies: the point is a peer that no SDK would produce.
"use strict";
const mode = process.argv[2] || "huge";
const readline = require("readline");
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const tool = (name) => ({
  name,
  description: `a tool of the ${mode} server`,
  inputSchema: { type: "object", properties: {} },
});
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    return;
  }
  if (request.id === undefined) return; // a notification
  const reply = (result) => send({ jsonrpc: "2.0", id: request.id, result });
  switch (request.method) {
    case "initialize":
      return reply({
        protocolVersion: request.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: `hostile-${mode}`, version: "1.0.0" },
      });
    case "tools/list": {
      const count = mode === "many-tools" ? 10000 : 1;
      return reply({ tools: Array.from({ length: count }, (_, i) => tool(`t${i}`)) });
    }
    case "tools/call":
      if (mode === "big" || mode === "huge") {
        const size = mode === "big" ? 1024 * 1024 : 50 * 1024 * 1024;
        return reply({ content: [{ type: "text", text: "é".repeat(size / 2) }] });
      }
      if (mode === "garbage") {
        return process.stdout.write("{this is not json at all\n");
      }
      if (mode === "dies") {
        process.exit(3);
      }
      return reply({ content: [{ type: "text", text: "fine" }] });
    case "ping":
      return reply({});
    default:
      return send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
