"""A tiny MCP server over stdio (newline-delimited JSON-RPC), standard library only, for the
capture proxy's test: `initialize`, `tools/list`, and `tools/call` of `echo` (answers its
`text`) and `read_config` (a tool error: the result has `isError`)."""

import json
import sys


def answer(message):
    method = message.get("method")
    if method == "initialize":
        return {
            "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    if method == "tools/call":
        name = message["params"]["name"]
        arguments = message["params"].get("arguments") or {}
        if name == "read_config":
            text = "permission denied: " + str(arguments.get("path"))
            return {"content": [{"type": "text", "text": text}], "isError": True}
        return {"content": [{"type": "text", "text": str(arguments.get("text"))}]}
    return {}


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue  # a notification
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message)}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
