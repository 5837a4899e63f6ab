"""Turns what tests/json_schema_suite.rs prints into the README's Markdown table.

    cargo test --test json_schema_suite -- --nocapture 2>/dev/null | python3 tests/schema_suite_table.py

Reads the per-dialect totals ("draft2020-12: N/M required cases pass") and the per-file lines
("  keyword  N/M") under each, and prints one row per keyword file: 2020-12 and draft-07 side
by side ("-" where the dialect has no such file).
"""

import re
import sys

counts = {}
totals = {}
dialect = None
for line in sys.stdin:
    head = re.match(r"^(draft[\w-]+): (\d+)/(\d+) required cases pass", line)
    if head:
        dialect = head.group(1)
        totals[dialect] = (head.group(2), head.group(3))
        continue
    row = re.match(r"^  (\S+)\s+(\d+)/(\d+)\s*$", line)
    if row and dialect:
        counts.setdefault(row.group(1), {})[dialect] = (row.group(2), row.group(3))
    elif not line.startswith("  "):
        dialect = None

if set(totals) != {"draft2020-12", "draft7"}:
    sys.exit("expected the draft2020-12 and draft7 summaries of tests/json_schema_suite.rs on stdin")


def cell(pair):
    if pair is None:
        return "-"
    passed, total = pair
    return f"{passed}/{total}" if passed == total else f"**{passed}/{total}**"


print("| keyword (suite file) | 2020-12 | draft-07 |")
print("| --- | --- | --- |")
for keyword in sorted(counts, key=str.lower):
    c = counts[keyword]
    print(f"| {keyword} | {cell(c.get('draft2020-12'))} | {cell(c.get('draft7'))} |")
print(f"| **all required cases** | {cell(totals['draft2020-12'])} | {cell(totals['draft7'])} |")
