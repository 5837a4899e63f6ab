"""A tiny MCP server on the Python SDK (`mcp`), serving Streamable HTTP on 127.0.0.1, for
tests/http_client.rs. Two tools, `add` and `echo`.

usage: py_streamable.py PORT [--json] [--stateless] [--sse]
  --json       reply with application/json bodies instead of SSE streams
  --stateless  no sessions (no Mcp-Session-Id)
  --sse        serve the HTTP+SSE transport of 2024-11-05 instead (GET /sse, POST /messages/)
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("py-http-fixture")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Returns the text it was given."""
    return text


if __name__ == "__main__":
    if "--sse" in sys.argv[2:]:
        server.run("sse", host="127.0.0.1", port=int(sys.argv[1]))
        sys.exit(0)
    server.run(
        "streamable-http",
        host="127.0.0.1",
        port=int(sys.argv[1]),
        json_response="--json" in sys.argv[2:],
        stateless_http="--stateless" in sys.argv[2:],
    )
