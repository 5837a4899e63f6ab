#!/usr/bin/env python3
"""A tiny stdio-to-stdio MCP proxy for the tests of `drive --through`.

    stdio_proxy.py [--drop METHOD]... [--strip CAPABILITY]... [--rewrite-ids] [--linger]
                   [--noise TEXT] [--shell] [--delay METHOD=MS]... [--cache METHOD]...
                   [--flood N] [--huge BYTES] [--url JSON] [--sub OLD=NEW]... -- COMMAND...

Starts COMMAND and copies JSON-RPC lines between our stdin/stdout and its stdin/stdout.
With no options it is faithful. The options make it lossy on purpose:

  --drop METHOD       never pass on a notification named METHOD (either way)
  --strip CAPABILITY  remove a dotted path (e.g. tools.listChanged) from the capabilities
                      of the server's initialize result
  --rewrite-ids       give every request a new id of the proxy's own, as a real
                      multi-client proxy does, and map the answers back
  --delay METHOD=MS   hold each notification named METHOD MS milliseconds before passing it on
  --cache METHOD      answer a request named METHOD from the first answer the server gave,
                      never asking it again (a stale cache)
  --noise TEXT        write TEXT as a line of our stdout first, as a chatty bridge does
  --flood N           write N notifications/message of our own to our stdout first
  --huge BYTES        write one line of BYTES bytes (a JSON-RPC notification) to our stdout first
  --sub OLD=NEW       replace the text OLD with NEW in every string value going to the client
  --url JSON          replace the URL of every URL mode elicitation going to the client with
                      JSON (a JSON string, so it may hold escapes)
  --shell             COMMAND is one string, run by sh -c (as bridges that take the server
                      command as one argument do)
  --linger            a bridge that will not go: ignores SIGTERM and, when its client
                      hangs up, keeps its server running (only SIGKILL ends them)
"""

import json
import signal
import subprocess
import sys
import threading


FLOOD, HUGE, URL, SUB = 0, 0, None, []


def parse_args(argv):
    drop, strip, rewrite, linger, noise, shell = set(), [], False, False, None, False
    delay, cache = {}, set()
    global FLOOD, HUGE, URL
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--drop":
            drop.add(argv[i + 1])
            i += 2
        elif argv[i] == "--strip":
            strip.append(argv[i + 1].split("."))
            i += 2
        elif argv[i] == "--rewrite-ids":
            rewrite = True
            i += 1
        elif argv[i] == "--delay":
            method, ms = argv[i + 1].rsplit("=", 1)
            delay[method] = int(ms) / 1000
            i += 2
        elif argv[i] == "--cache":
            cache.add(argv[i + 1])
            i += 2
        elif argv[i] == "--noise":
            noise = argv[i + 1]
            i += 2
        elif argv[i] == "--flood":
            FLOOD = int(argv[i + 1])
            i += 2
        elif argv[i] == "--sub":
            SUB.append(tuple(argv[i + 1].split("=", 1)))
            i += 2
        elif argv[i] == "--url":
            URL = json.loads(argv[i + 1])
            i += 2
        elif argv[i] == "--huge":
            HUGE = int(argv[i + 1])
            i += 2
        elif argv[i] == "--shell":
            shell = True
            i += 1
        elif argv[i] == "--linger":
            linger = True
            i += 1
        else:
            sys.exit(f"stdio_proxy: unknown option {argv[i]}")
    if i + 1 >= len(argv):
        sys.exit("stdio_proxy: give the command after --")
    command = argv[i + 1 :]
    if shell:
        if len(command) != 1:
            sys.exit("stdio_proxy: --shell takes the command as one argument")
        command = ["sh", "-c", command[0]]
    return drop, strip, rewrite, linger, noise, command, delay, cache


DROP, STRIP, REWRITE, LINGER, NOISE, COMMAND, DELAY, CACHE = parse_args(sys.argv[1:])
if NOISE is not None:
    sys.stdout.buffer.write(NOISE.encode() + b"\n")
    sys.stdout.buffer.flush()
for n in range(FLOOD):
    line = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": n}}
    sys.stdout.buffer.write(json.dumps(line).encode() + b"\n")
sys.stdout.buffer.flush()
if HUGE:
    head = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"'
    sys.stdout.buffer.write(head + b"A" * max(0, HUGE - len(head) - 4) + b'"}}\n')
    sys.stdout.buffer.flush()
if LINGER:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(
    COMMAND,
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    # The server lingers too: it ignores SIGTERM from the start (an ignored signal stays
    # ignored across exec).
    preexec_fn=(lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN)) if LINGER else None,
)
lock = threading.Lock()
# Ids as each side knows them: ours (sent on) -> theirs (as the sender chose it).
to_server_ids, to_client_ids = {}, {}
# Which of our request ids was an initialize (its result gets stripped).
initialize_ids = set()
# --cache: the first answer per method, and the ids of requests whose answer is to be kept.
cached, to_cache = {}, {}
counter = [0]


def fresh_id():
    with lock:
        counter[0] += 1
        return f"proxy-{counter[0]}"


def write(stream, msg):
    with lock:
        stream.write((json.dumps(msg) + "\n").encode())
        stream.flush()


def strip_capabilities(result):
    caps = result.get("capabilities")
    for path in STRIP:
        node = caps
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(path[-1], None)


def substitute(value):
    """--sub: the text replaced in every string of a message."""
    if isinstance(value, str):
        for old, new in SUB:
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: substitute(v) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v) for v in value]
    return value


def replace_url(msg):
    """--url: the URL of a URL mode elicitation (a legacy request or a modern input request)."""
    asks = []
    if msg.get("method") == "elicitation/create":
        asks.append(msg.get("params"))
    result = msg.get("result")
    if isinstance(result, dict) and isinstance(result.get("inputRequests"), dict):
        asks.extend(r.get("params") for r in result["inputRequests"].values() if isinstance(r, dict))
    for params in asks:
        if isinstance(params, dict) and "url" in params:
            params["url"] = URL


def handle(msg, own_ids, their_ids):
    """One message on its way; own_ids maps ids we gave requests going this way, their_ids
    those we gave requests coming the other way (whose answers go this way)."""
    if not isinstance(msg, dict):
        return msg
    if URL is not None and own_ids is to_client_ids:
        replace_url(msg)
    if SUB and own_ids is to_client_ids:
        msg = substitute(msg)
    method, has_id = msg.get("method"), "id" in msg
    if method is not None and not has_id and method in DROP:
        return None
    if method is not None and has_id and REWRITE:
        new = fresh_id()
        own_ids[new] = msg["id"]
        if method == "initialize":
            initialize_ids.add(new)
        msg["id"] = new
    elif method is not None and has_id and method == "initialize":
        initialize_ids.add(msg["id"])
    if method is None and has_id:
        if msg["id"] in initialize_ids and isinstance(msg.get("result"), dict):
            strip_capabilities(msg["result"])
        if REWRITE and msg["id"] in their_ids:
            msg["id"] = their_ids.pop(msg["id"])
    if REWRITE and method == "notifications/cancelled":
        params = msg.get("params") or {}
        for new, old in own_ids.items():
            if old == params.get("requestId"):
                params["requestId"] = new
    return msg


def from_cache(msg, back):
    """Answers a cached request on `back` itself; True when it did."""
    method = msg.get("method") if isinstance(msg, dict) else None
    if method not in CACHE or "id" not in msg:
        return False
    if method in cached:
        write(back, {"jsonrpc": "2.0", "id": msg["id"], "result": cached[method]})
        return True
    to_cache[msg["id"]] = method
    return False


def remember(msg):
    if isinstance(msg, dict) and "method" not in msg and msg.get("id") in to_cache:
        method = to_cache.pop(msg["id"])
        if "result" in msg:
            cached[method] = msg["result"]


def pump(source, sink, own_ids, their_ids, back=None):
    for line in source:
        try:
            msg = json.loads(line)
        except ValueError:
            sink.write(line)
            sink.flush()
            continue
        if back is not None and from_cache(msg, back):
            continue
        if back is None:
            remember(msg)
        msg = handle(msg, own_ids, their_ids)
        if msg is None:
            continue
        wait = DELAY.get(msg.get("method")) if isinstance(msg, dict) and "id" not in msg else None
        if wait:
            threading.Timer(wait, write, args=(sink, msg)).start()
        else:
            write(sink, msg)


def upstream():
    try:
        pump(sys.stdin.buffer, child.stdin, to_server_ids, to_client_ids, back=sys.stdout.buffer)
    except BrokenPipeError:
        pass
    # Our client hung up: so do we, toward the server (unless we linger).
    if LINGER:
        threading.Event().wait()
    try:
        child.stdin.close()
    except BrokenPipeError:
        pass


up = threading.Thread(target=upstream, daemon=True)
up.start()
try:
    pump(child.stdout, sys.stdout.buffer, to_client_ids, to_server_ids)
except BrokenPipeError:
    pass
child.wait()
