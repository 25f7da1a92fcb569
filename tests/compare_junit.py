#!/usr/bin/python3
"""Compares pytest JUnit XML reports of the same tests run on the bare host and in sbx.

Usage: compare_junit.py --host-dir DIR --sandbox-dir DIR [--floor SUITE=N ...]
                        [--host-wall S] [--sandbox-wall S] [--totals FILE]

Both directories hold one report per suite, matched by file name (numpy.xml, pandas.xml, ...).
Fails (exit 1) if any test that passed on the host did not pass in the sandbox, printing each
with its sandbox outcome and message; a suite report missing or unreadable on either side is
also a failure (exit 2), and so is a suite named by --floor that passed fewer than N tests on
the host or has no report on either side. Prints passed/failed/skipped per suite and side,
and the wall times (the --*-wall seconds measured by the caller around each side, else the
reports' own times).
--totals appends "library suites (...)<TAB>passed<TAB>failed<TAB>0<TAB>0" for tools/test.sh's
closing line (tests/gtest_report.py --summary): the host passes that pass in the sandbox, and
those that do not plus the broken suites; the libraries' own skips are theirs, not counted.
Standard library only: run it with the host's /usr/bin/python3.
"""

import argparse
import collections
import os
import sys
import xml.etree.ElementTree as ET

PASSED, FAILED, ERROR, SKIPPED, XFAILED = "passed", "failed", "error", "skipped", "xfailed"


def outcome_of(case):
    """The outcome of one <testcase> and its message, the way pytest's junitxml writes them."""
    failure = case.find("failure")
    error = case.find("error")
    skipped = case.find("skipped")
    for element, outcome in ((failure, FAILED), (error, ERROR)):
        if element is not None:
            text = element.get("message") or ""
            body = (element.text or "").strip()
            if body:
                text += "\n" + body
            return outcome, text
    if skipped is not None:
        kind = XFAILED if skipped.get("type") == "pytest.xfail" else SKIPPED
        return kind, skipped.get("message") or ""
    return PASSED, ""


def read_report(path):
    """Returns ({test id: (outcome, message)}, seconds). Repeated ids get a #N suffix."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    results = {}
    seen = collections.Counter()
    seconds = 0.0
    for suite in suites:
        seconds += float(suite.get("time") or 0)
        for case in suite.iter("testcase"):
            test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
            seen[test_id] += 1
            if seen[test_id] > 1:
                test_id += f"#{seen[test_id]}"
            results[test_id] = outcome_of(case)
    return results, seconds


def tally(results):
    counts = collections.Counter(outcome for outcome, _ in results.values())
    return (f"{counts[PASSED]:6d} passed {counts[FAILED] + counts[ERROR]:5d} failed "
            f"{counts[SKIPPED]:5d} skipped {counts[XFAILED]:4d} xfailed")


def shorten(message, lines=12):
    kept = message.strip().splitlines()
    if len(kept) > lines:
        kept = kept[:3] + ["    ..."] + kept[-(lines - 4):]
    return "\n".join("      " + line for line in kept)


def floor(text):
    """--floor's SUITE=N as (suite, n)."""
    suite, _, number = text.partition("=")
    if not suite or not number.isdigit():
        raise argparse.ArgumentTypeError(f"expected SUITE=N (N a whole number), got '{text}'")
    return suite, int(number)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host-dir", required=True)
    parser.add_argument("--sandbox-dir", required=True)
    parser.add_argument("--host-wall", type=float)
    parser.add_argument("--sandbox-wall", type=float)
    parser.add_argument("--floor", action="append", default=[], type=floor, metavar="SUITE=N",
                        help="the suite must pass at least N tests on the host")
    parser.add_argument("--totals", help="append this comparison's totals to this file")
    args = parser.parse_args()
    floors = dict(args.floor)

    names = sorted({n for d in (args.host_dir, args.sandbox_dir)
                    for n in os.listdir(d) if n.endswith(".xml")} |
                   {f"{suite}.xml" for suite in floors})
    if not names:
        print("compare_junit: no JUnit reports found", file=sys.stderr)
        return 2
    broken = []
    regressions = []
    seconds = {"host": 0.0, "sandbox": 0.0}
    totals = {"host": {}, "sandbox": {}}
    print(f"{'suite':10s} {'side':8s} {'tests':>6s}  outcome")
    for name in names:
        suite = name[:-len(".xml")]
        reports = {}
        for side, directory in (("host", args.host_dir), ("sandbox", args.sandbox_dir)):
            path = os.path.join(directory, name)
            try:
                reports[side], took = read_report(path)
            except (OSError, ET.ParseError) as error:
                broken.append(f"{suite}: the {side} report {path} is missing or unreadable: {error}")
                continue
            seconds[side] += took
            totals[side].update({f"{suite}::{k}": v for k, v in reports[side].items()})
            print(f"{suite:10s} {side:8s} {len(reports[side]):6d} {tally(reports[side])}")
        if suite in floors and "host" in reports:
            passes = sum(1 for o, _ in reports["host"].values() if o == PASSED)
            if passes < floors[suite]:
                broken.append(f"{suite}: {passes} tests passed on the host, fewer than its floor "
                              f"of {floors[suite]} (tests/library_suites.sh SUITES): did the suite "
                              "stop collecting tests?")
        if len(reports) < 2:
            continue
        for test_id, (outcome, _) in sorted(reports["host"].items()):
            if outcome != PASSED:
                continue
            inside, message = reports["sandbox"].get(test_id, ("missing", "not in the sandbox report"))
            if inside != PASSED:
                regressions.append((suite, test_id, inside, message))

    for side in ("host", "sandbox"):
        print(f"{'all':10s} {side:8s} {len(totals[side]):6d} {tally(totals[side])}")
    host_wall = args.host_wall if args.host_wall is not None else seconds["host"]
    sandbox_wall = args.sandbox_wall if args.sandbox_wall is not None else seconds["sandbox"]
    print(f"wall time: host {host_wall:.1f} s, sandbox {sandbox_wall:.1f} s "
          f"(pytest's own session times: host {seconds['host']:.1f} s, "
          f"sandbox {seconds['sandbox']:.1f} s)")
    host_only = sum(1 for o, _ in totals["host"].values() if o == PASSED)
    if args.totals:
        with open(args.totals, "a", encoding="utf-8") as out:
            print(f"library suites (host passes, in the sandbox)\t{host_only - len(regressions)}"
                  f"\t{len(regressions) + len(broken)}\t0\t0", file=out)
    for problem in broken:
        print(f"FAIL {problem}")
    if regressions:
        print(f"FAIL {len(regressions)} of {host_only} tests that pass on the host "
              "do not pass in the sandbox:")
        for suite, test_id, inside, message in regressions:
            print(f"  [{suite}] {test_id}: {inside} in the sandbox")
            if message:
                print(shorten(message))
    if broken:
        return 2
    if regressions:
        return 1
    print(f"OK: all {host_only} tests that pass on the host pass in the sandbox")
    return 0


if __name__ == "__main__":
    sys.exit(main())
