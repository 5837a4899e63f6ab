"""Validates mcp-witness check reports structurally, independently of the Rust code.

    validate_reports.py --json FILE --json-schema SCHEMA --junit FILE --sarif FILE --sarif-schema SCHEMA

JSON against schemas/check-report.schema.json; JUnit parsed back with xml.etree and its counts
compared with the JSON report; SARIF against the published SARIF 2.1.0 schema, one rule per
check id, one result per warning or failure. Prints what is wrong and exits 1, else exits 0.
"""
import argparse
import json
import sys
import xml.etree.ElementTree as ET

import jsonschema


def main():
    ap = argparse.ArgumentParser()
    for name in ("json", "json-schema", "junit", "sarif", "sarif-schema"):
        ap.add_argument("--" + name, required=True)
    a = ap.parse_args()
    report = json.load(open(a.json))
    jsonschema.validate(report, json.load(open(a.json_schema)), format_checker=jsonschema.FormatChecker())
    counts = report["counts"]

    root = ET.parse(a.junit).getroot()
    assert root.tag == "testsuites", root.tag
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(report["results"]), (len(cases), len(report["results"]))
    failures = len(root.findall("./testsuite/testcase/failure"))
    want = counts["fail"] + (counts["warn"] if report["strict"] else 0)
    assert failures == want == int(root.get("failures")), (failures, want, root.get("failures"))
    assert len(root.findall("./testsuite/testcase/skipped")) == counts["skip"]
    names = [c.get("name") for c in cases]
    assert names == [r["id"] for r in report["results"]], "test case names are the check ids in order"

    sarif = json.load(open(a.sarif))
    jsonschema.validate(sarif, json.load(open(a.sarif_schema)))
    run = sarif["runs"][0]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert len(rules) == len(set(rules)), "one rule per check id"
    findings = [r for r in report["results"] if r["status"] in ("warn", "fail")]
    assert [r["ruleId"] for r in run["results"]] == [f["id"] for f in findings]
    for res in run["results"]:
        assert rules[res["ruleIndex"]] == res["ruleId"]
    print(f"ok: {len(cases)} checks, {failures} JUnit failures, {len(run['results'])} SARIF results")


if __name__ == "__main__":
    try:
        main()
    except (AssertionError, jsonschema.ValidationError) as e:
        print(f"invalid: {e}", file=sys.stderr)
        sys.exit(1)
