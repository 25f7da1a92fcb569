#!/usr/bin/python3
"""Reads GoogleTest XML reports: prints every skip with its reason and fails on unexpected ones.

Usage:
  gtest_report.py --label LABEL --expected FILE [--totals FILE] REPORT.xml [REPORT.xml ...]
  gtest_report.py --summary FILE

The first form prints each skipped test with the message it gave GTEST_SKIP(), marks it
"expected" when an entry of the --expected list matches both its name and its reason, and
exits 1 when any skip is unexpected or any test failed, 2 when a report is missing or
unreadable (the binary crashed, or never ran). It appends one tab-separated line
"LABEL passed failed skipped expected-skips" to the --totals file.
The second form prints each line of such a totals file and then the closing line,
"N passed, M failed, K skipped", summed over all of them.

The expected-skips list: one entry a line, three fields separated by " | ":
  TEST-NAME GLOB | REASON GLOB | WHY THIS SKIP IS EXPECTED ON THIS HOST
Globs are fnmatch's (*, ?, [...]), matched against the whole "Suite.Test" name and the whole
reason. '#' starts a comment line. An entry without a why is an error.
GoogleTest's XML is read rather than its JSON: the JSON of Debian 12's GoogleTest (1.12)
carries no skip messages. Standard library only: run it with Debian's /usr/bin/python3.
"""

import argparse
import fnmatch
import sys
import xml.etree.ElementTree as ET

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


class ListError(Exception):
    pass


def read_expected(path):
    """The list's entries as (name glob, reason glob, why, line number)."""
    entries = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = [field.strip() for field in line.split(" | ")]
            if len(fields) != 3 or not all(fields):
                raise ListError(f"{path}:{number}: expected 'TEST GLOB | REASON GLOB | WHY' "
                                f"(three non-empty fields separated by ' | '), got: {line}")
            entries.append((*fields, number))
    return entries


def read_report(path):
    """[(test name, outcome, message)] of one GoogleTest XML report."""
    results = []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}.{case.get('name', '')}"
        failures = case.findall("failure") + case.findall("error")
        skipped = case.find("skipped")
        if failures:
            message = "\n".join(f.get("message") or (f.text or "") for f in failures)
            results.append((name, FAILED, message))
        elif skipped is not None or case.get("result") == "skipped":
            message = skipped.get("message", "") if skipped is not None else ""
            results.append((name, SKIPPED, skip_reason(message)))
        elif case.get("status", "run") == "run" and case.get("result", "completed") == "completed":
            results.append((name, PASSED, ""))
        # Anything else is a filtered-out or DISABLED_ test, which GoogleTest does not run.
    return results


def skip_reason(message):
    """The text given to GTEST_SKIP(), without the "file:line" GoogleTest puts before it."""
    head, _, reason = message.partition("\n")
    if reason and head.rsplit(":", 1)[-1].isdigit():
        return reason.strip()
    return message.strip()


def check(args):
    try:
        entries = read_expected(args.expected)
    except (OSError, ListError) as error:
        print(f"gtest_report: bad --expected list: {error}", file=sys.stderr)
        return 2
    results, broken = [], []
    for path in args.reports:
        try:
            results += read_report(path)
        except (OSError, ET.ParseError) as error:
            broken.append(f"{path}: {error} (did the test binary crash before writing it?)")
    counts = {PASSED: 0, FAILED: 0, SKIPPED: 0}
    expected_skips, unexpected = 0, []
    for name, outcome, message in results:
        counts[outcome] += 1
        if outcome != SKIPPED:
            continue
        match = next((e for e in entries
                      if fnmatch.fnmatchcase(name, e[0]) and fnmatch.fnmatchcase(message, e[1])),
                     None)
        if match:
            expected_skips += 1
            print(f"  skipped (expected: {args.expected}:{match[3]}) {name}: {message}")
        else:
            unexpected.append((name, message))
            print(f"  SKIPPED, NOT EXPECTED {name}: {message or '<no reason given>'}")
    failed = counts[FAILED] + len(broken)
    line = (f"{counts[PASSED]} passed, {failed} failed, {counts[SKIPPED]} skipped "
            f"({expected_skips} expected)")
    print(f"{args.label}: {line}")
    if args.totals:
        with open(args.totals, "a", encoding="utf-8") as totals:
            print(f"{args.label}\t{counts[PASSED]}\t{failed}\t{counts[SKIPPED]}\t{expected_skips}",
                  file=totals)
    for problem in broken:
        print(f"FAIL {args.label}: report missing or unreadable: {problem}")
    if unexpected:
        print(f"FAIL {args.label}: {len(unexpected)} test(s) skipped for a reason not in "
              f"{args.expected}; make the test run here, or add an entry saying why this host "
              "cannot run it:")
        for name, message in unexpected:
            print(f"  {name}: {message or '<no reason given>'}")
    if broken:
        return 2
    return 1 if unexpected or counts[FAILED] else 0


def summary(path):
    total = [0, 0, 0, 0]
    try:
        with open(path, encoding="utf-8") as lines:
            rows = [line.rstrip("\n").split("\t") for line in lines if line.strip()]
    except FileNotFoundError:
        rows = []
    for label, *numbers in rows:
        numbers = [int(n) for n in numbers]
        total = [a + b for a, b in zip(total, numbers)]
        print(f"  {label}: {numbers[0]} passed, {numbers[1]} failed, {numbers[2]} skipped "
              f"({numbers[3]} expected)")
    print(f"{total[0]} passed, {total[1]} failed, {total[2]} skipped "
          f"({total[3]} of the skips expected on this host)")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--summary", metavar="TOTALS")
    parser.add_argument("--label")
    parser.add_argument("--expected")
    parser.add_argument("--totals")
    parser.add_argument("reports", nargs="*")
    args = parser.parse_args()
    if args.summary:
        return summary(args.summary)
    if not (args.label and args.expected and args.reports):
        parser.error("--label, --expected and at least one REPORT are needed (or --summary)")
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
