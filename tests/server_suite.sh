#!/bin/bash
# The server's tests (tests/server: the wire protocol of docs/server-api.md), with Debian's
# pytest against the real `sbx serve` of build/ (the Python package: tests/python_suite.sh).
# Usage: tests/server_suite.sh [JUNIT.xml]   (the report tools/test.sh checks for skips)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
report=${1:-}
export SBX_BIN=$root/build/sbx
# Debian's interpreter, whatever python3 PATH finds first: pytest comes from python3-pytest.
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs ${report:+--junitxml="$report"} \
  tests/server
