"""A tiny MCP server on the Python SDK (`mcp`), serving Streamable HTTP on 127.0.0.1, for
tests/http_client.rs. Two tools, `add` and `echo`.

usage: py_streamable.py PORT [--json] [--stateless] [--sse] [--tls CERT KEY]
  --json       reply with application/json bodies instead of SSE streams
  --stateless  no sessions (no Mcp-Session-Id)
  --sse        serve the HTTP+SSE transport of 2024-11-05 instead (GET /sse, POST /messages/)
  --tls CERT KEY  serve Streamable HTTP over TLS (https) with this PEM certificate and key
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
    if "--tls" in sys.argv[2:]:
        import uvicorn

        i = sys.argv.index("--tls")
        app = server.streamable_http_app(
            json_response="--json" in sys.argv[2:],
            stateless_http="--stateless" in sys.argv[2:],
        )
        uvicorn.run(
            app,
            host="127.0.0.1",
            port=int(sys.argv[1]),
            ssl_certfile=sys.argv[i + 1],
            ssl_keyfile=sys.argv[i + 2],
            log_level="warning",
        )
        sys.exit(0)
    server.run(
        "streamable-http",
        host="127.0.0.1",
        port=int(sys.argv[1]),
        json_response="--json" in sys.argv[2:],
        stateless_http="--stateless" in sys.argv[2:],
    )
