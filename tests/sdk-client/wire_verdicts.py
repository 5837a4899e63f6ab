"""The official Python SDK's verdict on server messages, for the wire group's differential
test (tests/wire_differential.rs). Each message is validated as `mcp` 2.3 does, per protocol
version: the JSON-RPC message union (`mcp_types.jsonrpc.JSONRPCMessage`), then the result of
the method the request called (`mcp_types.methods.validate_server_result`), or the server
notification / request (`parse_server_notification`, `parse_server_request`).

Usage: python wire_verdicts.py < cases.json  (the reference venv's python)
Input: [{kind: "reply"|"notification"|"request", method, version, message}, ...]
Output: one JSON array, per case {accepted: true|false|null, why}; null: no opinion (a method
the SDK has no type for in that version).
"""

import json
import sys

from pydantic import TypeAdapter, ValidationError

from mcp_types import methods
from mcp_types.jsonrpc import JSONRPCMessage

ENVELOPE = TypeAdapter(JSONRPCMessage)


def verdict(case):
    m = case["message"]
    version = case["version"]
    try:
        ENVELOPE.validate_python(m)
    except ValidationError as e:
        return {"accepted": False, "why": "envelope: " + str(e).splitlines()[0]}
    try:
        if case["kind"] == "reply":
            if "error" in m:
                return {"accepted": True, "why": ""}
            methods.validate_server_result(case["method"], version, m["result"])
        elif case["kind"] == "notification":
            methods.parse_server_notification(m["method"], version, m.get("params"))
        else:
            methods.parse_server_request(m["method"], version, m.get("params"))
    except KeyError as e:
        return {"accepted": None, "why": f"no type for {e}"}
    except ValidationError as e:
        lines = str(e).splitlines()
        return {"accepted": False, "why": "; ".join(lines[:3])}
    return {"accepted": True, "why": ""}


print(json.dumps([verdict(c) for c in json.load(sys.stdin)]))
