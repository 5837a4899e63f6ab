#!/usr/bin/env python3
"""Re-verify an mcp-witness evidence file without mcp-witness.

    reverify.py [--trust KEY|FILE]... [--schema PATH] EVIDENCE.jsonl
    reverify.py --each [--schema PATH] LINES.jsonl

Checks every line: it is its own canonical JSON form (RFC 8785: keys sorted by UTF-16
code units), holds only safe integers, matches schemas/evidence-block.schema.json, has the
derived digests and cross-field rules of its kind (target.id and observation_sha256
recomputed; a check block's counts; a client block's target.client; a probe block's
escapees that survived are among its survivors), carries hash = SHA-256(canonical block
without hash and sig) and an Ed25519 sig over those 32 bytes by its `key`, and continues
the chain (seq, prev, file_id; with --trust: signed by a trusted key; no earlier block with
its target.id and observed_at), in that order, as mcp-witness verify orders them.
Exit 0 when intact; 1 with "line N: what" for the first broken line; 2 on bad usage or an
unreadable file. With --each, every line is checked on its own (no chain) and one
"line N: ok" or "line N: what" is printed per line; exit 0.
Needs PyNaCl and jsonschema (tests/setup/install-verifier-tools makes a venv with them).
"""

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

import jsonschema
from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

SCHEMA = Path(__file__).resolve().parent.parent / "schemas" / "evidence-block.schema.json"
GENESIS = "0" * 64
SAFE = 2**53 - 1


def jcs(value):
    """RFC 8785 text for values a block may hold (strings, integers, true, false, null)."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(jcs(k) + ":" + jcs(value[k]) for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def canonical(value):
    """The bytes hashes cover: JCS (keys by UTF-16 code units, no whitespace, UTF-8)."""
    return jcs(value).encode("utf-8")


def sha256_hex(value):
    return hashlib.sha256(canonical(value)).hexdigest()


def unsafe_number(value, path="$"):
    """JSON path of the first number that is not an integer within ±(2^53−1), else None."""
    if isinstance(value, float) or (type(value) is int and abs(value) > SAFE):
        return path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        found = unsafe_number(v, f"{path}.{k}" if isinstance(value, dict) else f"{path}[{k}]")
        if found:
            return found
    return None


V2_TOP = ("surface", "expected", "http")
V2_TARGET = ("program_sha256_source", "url", "transport", "headers")


def derived(b):
    """What is wrong with a block's derived digests or cross-field rules, else None."""
    t = b["target"]
    if b["format"] == "mcp-witness/evidence-block/v1":
        for k in V2_TOP:
            if k in b:
                return f"{k} is a format v2 field, in a v1 block"
        for k in V2_TARGET:
            if k in t:
                return f"target.{k} is a format v2 field, in a v1 block"
        if "http" in b.get("session", {}):
            return "session.http is a format v2 field, in a v1 block"
    if b["kind"] == "client":
        identity = {"client": t["client"]}
        observation = {"client": b["client"], "domains": b["domains"], "verdict": b["verdict"]}
    elif "url" in t:
        identity = {k: t[k] for k in ("url", "headers", "era", "protocol_version")}
    else:
        identity = {k: t[k] for k in ("command", "cwd", "env", "era", "protocol_version")}
    if sha256_hex(identity) != t["id"]:
        return "target.id does not match what it digests"
    if b["kind"] == "check":
        observation = {
            "program_sha256": t.get("program_sha256"), "era": b["era"],
            "protocol_version": b["protocol_version"], "server": b["server"],
            "results": [[r["id"], r["status"]] for r in b["results"]],
            "could_not_run": b["could_not_run"] is not None,
        }
        if b.get("surface") is not None:
            observation["surface"] = b["surface"]["sha256"]
    if b["kind"] != "probe":
        if sha256_hex(observation) != b["observation_sha256"]:
            return "observation_sha256 does not match what it digests"
        if b["kind"] == "check":
            for status in ("pass", "warn", "fail", "skip"):
                if b["counts"][status] != sum(r["status"] == status for r in b["results"]):
                    return f"counts.{status} does not count the results with status {status}"
        elif t["client"] != b["client"]:
            return "target.client differs from client"
        return None
    tools, call = b["tools"], b["call"]
    observation = {
        "program_sha256": t.get("program_sha256"), "era": b["era"],
        "protocol_version": b["protocol_version"], "server": b["server"],
        "capabilities": b["capabilities"],
        "tools": tools and {"count": tools["count"], "names": tools["names"]},
        "call": call and {k: call[k] for k in ("tool", "outcome", "result_sha256")},
        "verdict": b["verdict"], "reasons": [r["code"] for r in b["reasons"]],
    }
    if b.get("surface") is not None:
        observation["surface"] = b["surface"]["sha256"]
    if sha256_hex(observation) != b["observation_sha256"]:
        return "observation_sha256 does not match what it digests"
    td = b["teardown"] or {}
    for e in td.get("escapees", []):
        if e["ended"] == "survived" and e["pid"] not in td["survivors"]:
            return f"teardown escapee {e['pid']} survived but is not among the survivors"
    return None


def check_line(raw, validator):
    """(block, None) when the line is a good block on its own (trust aside), else (None, what)."""
    try:
        b = json.loads(raw.decode("utf-8"))
    except ValueError as e:  # UnicodeDecodeError is a ValueError too
        return None, f"not JSON: {e}"
    if not isinstance(b, dict):
        return None, "not a JSON object"
    try:
        if canonical(b) != raw:
            return None, "not in canonical form (keys sorted, no whitespace, UTF-8)"
    except UnicodeEncodeError:  # a lone surrogate escape: not something serde_json writes
        return None, "not in canonical form (lone surrogate)"
    if path := unsafe_number(b):
        return None, f"number at {path} is not a safe integer"
    if error := jsonschema.exceptions.best_match(validator.iter_errors(b)):
        return None, f"schema: {error.json_path}: {error.message}"
    if problem := derived(b):
        return None, problem
    digest = hashlib.sha256(canonical({k: v for k, v in b.items() if k not in ("hash", "sig")})).digest()
    if digest.hex() != b["hash"]:
        return None, "hash does not match the block's content"
    try:
        VerifyKey(bytes.fromhex(b["key"].removeprefix("ed25519:"))).verify(digest, bytes.fromhex(b["sig"]))
    except (BadSignatureError, ValueError):
        return None, "signature does not verify against the block's key"
    return b, None


def verify(data, validator, trusted):
    """(blocks, None) when intact, else (None, 'line N: what')."""
    lines = data.split(b"\n")
    if lines[-1]:
        return None, f"line {len(lines)}: torn last line of {len(lines[-1])} bytes (no newline)"
    prev, file_id, moments = GENESIS, None, set()
    for n, raw in enumerate(lines[:-1], start=1):
        b, what = check_line(raw, validator)
        if what is None and b["seq"] != n:
            what = f"seq is {b['seq']} where {n} was expected"
        elif what is None and b["prev"] != prev:
            what = "prev is not the previous block's hash"
        elif what is None and file_id not in (None, b["file_id"]):
            what = f"file_id {b['file_id']} differs from the file's {file_id}"
        elif what is None and trusted and b["key"] not in trusted:
            what = f"signed by {b['key']}, which is not a trusted key"
        elif what is None and (b["target"]["id"], b["observed_at"]) in moments:
            what = "a block with the same target and observed_at is already in the file"
        if what is not None:
            return None, f"line {n}: {what}"
        prev, file_id = b["hash"], b["file_id"]
        moments.add((b["target"]["id"], b["observed_at"]))
    return len(lines) - 1, None


def trusted_keys(values):
    """--trust values: key texts, or files of key texts (blank lines and # comments ignored)."""
    keys = set()
    for value in values:
        texts = [value] if value.strip().startswith("ed25519:") else Path(value).read_text().splitlines()
        keys.update(t.strip() for t in texts if t.strip() and not t.strip().startswith("#"))
    for key in keys:
        if not re.fullmatch(r"ed25519:[0-9a-f]{64}", key):
            raise ValueError(f"`{key[:80]}` is not a public key: expected ed25519:<64 hex>")
    return keys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trust", action="append", default=[], metavar="KEY|FILE")
    ap.add_argument("--schema", type=Path, default=SCHEMA)
    ap.add_argument("--each", action="store_true", help="check every line on its own, no chain")
    ap.add_argument("evidence", type=Path)
    args = ap.parse_args()
    try:
        schema = json.loads(args.schema.read_text())
        trusted = trusted_keys(args.trust)
        data = args.evidence.read_bytes()
    except (OSError, ValueError) as e:
        ap.exit(2, f"reverify: {e}\n")
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    if args.each:
        for n, raw in enumerate(data.split(b"\n")[:-1], start=1):
            _, what = check_line(raw, validator)
            print(f"line {n}: {what or 'ok'}")
        return 0
    blocks, broken = verify(data, validator, trusted)
    if broken:
        print(broken)
        return 1
    print(f"intact: {blocks} blocks" + ("" if trusted else " (no --trust: signatures only self-consistent)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
