"""A minimal MCP server over stdio without the SDK (newline-delimited JSON-RPC), for bench_mcp.py: it
starts in milliseconds, so with STARTUP_NAP it is slow to start without using the CPU, and the
benchmark sees loop's own parallel start rather than the machine's cores importing FastMCP."""

import json
import os
import sys
import time

if os.environ.get("STARTUP_NAP"):
    time.sleep(float(os.environ["STARTUP_NAP"]))
TOOL = {"name": "read_note", "description": "Read one note by name.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:  # a notification (initialized): no answer
        continue
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "tiny", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": f"note {params['arguments'].get('name')}: buy milk"}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
