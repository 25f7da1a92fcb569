#!/bin/bash
# The Python package's tests (python/tests) with Debian's pytest against the built server.
#
# 1. `pip install ./python` offline, into a throwaway venv that sees Debian's packages, and an
#    import of the installed package from outside the tree (the package needs no PyPI);
# 2. pytest on python/tests: the fixtures start `sbx serve` (the --sbx binary) on temporary
#    sockets. The run fails if pytest fails or collects nothing (exit code 5), or if any test
#    was skipped: every test here must run on a host that runs the integration tests.
#
# Usage: tests/python_suite.sh [--sbx PATH] [--totals FILE] [PYTEST ARGS...]
#   --sbx PATH  the sbx binary (default: build/sbx of this checkout)
#   --totals F  append "python package<TAB>passed<TAB>failed<TAB>skipped<TAB>0" to F
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sbx=$root/build/sbx
totals=
while (($#)); do
  case $1 in
    --sbx) sbx=$(realpath "${2:?--sbx needs a path}"); shift 2 ;;
    --totals) totals=${2:?--totals needs a file}; shift 2 ;;
    -h | --help) sed -n '2,/^#   --totals/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
python=/usr/bin/python3
work=$(mktemp -d /tmp/sbx-python-suite.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "python suite: offline install of ./python"
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index --no-cache-dir "$root/python"
(cd "$work" && "$work/venv/bin/python" -c \
  'import sbx, sbx.ag2, sbx.autogen, sbx.openai_agents; assert "site-packages" in sbx.__file__')

echo "python suite: pytest python/tests with $sbx"
status=0
SBX_BIN=$sbx "$python" -m pytest -p no:cacheprovider -rs --junitxml="$work/junit.xml" \
  "$root/python/tests" "$@" || status=$?
if [[ ! -s $work/junit.xml ]]; then
  echo "python suite: pytest wrote no report (exit $status): a usage or internal error" >&2
  exit 1
fi
counts=$("$python" - "$work/junit.xml" <<'PY'
import sys
import xml.etree.ElementTree as tree
suite = tree.parse(sys.argv[1]).getroot()
suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
total, failed, errors, skipped = (
    int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped"))
print(total - failed - errors - skipped, failed + errors, skipped)
PY
)
read -r passed failed skipped <<<"$counts"
if [[ -n $totals ]]; then
  printf 'python package\t%s\t%s\t%s\t0\n' "$passed" "$failed" "$skipped" >>"$totals"
fi
if ((status == 5 || passed == 0)); then
  echo "python suite: pytest collected or passed nothing" >&2
  exit 1
fi
if ((status == 0 && skipped > 0)); then
  echo "python suite: $skipped tests skipped; none may be" >&2
  exit 1
fi
exit "$status"
