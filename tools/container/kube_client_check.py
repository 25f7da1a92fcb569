#!/usr/bin/env python3
"""The caller's side of tools/container/kube_play.sh: sbx.Client against the played pod.

Usage: kube_client_check.py URL TOKEN_FILE POD. Prints one "ok"/"FAIL" line per check and exits 1
when any failed. The checks: a request without the token is refused (401); with it, /v1/health
answers "ok" with the enforcement a session gets; a session runs print(2**10) in its sandbox
and returns 1024, as uid 1000 in a pid namespace of its own; its id starts with "POD_", the
pod's name (the Deployment's SBX_SESSION_PREFIX from metadata.name), for a router.
"""
import sys
import urllib.error
import urllib.request

import sbx

url, token_file, pod = sys.argv[1:4]
with open(token_file) as f:
    token = f.read().strip()
failures = 0


def check(name, passed, detail=""):
    global failures
    print(("ok   " if passed else "FAIL ") + name + (": " + detail if detail else ""))
    failures += 0 if passed else 1


try:
    urllib.request.urlopen(url + "/v1/health", timeout=10)
    check("no token: refused", False, "answered 200")
except urllib.error.HTTPError as error:
    check("no token: refused", error.code == 401, "HTTP %d" % error.code)

client = sbx.Client(url, token=token, timeout=120)
health = client.health()
enforcement = health.get("enforcement", {})
check("health with the token", health.get("status") == "ok", "status %s" % health.get("status"))
check("health: seccomp installed in sessions", enforcement.get("seccomp") is True,
      "enforcement %s" % {k: enforcement.get(k) for k in ("network", "cgroup", "seccomp")})

with client.session() as session:
    check("the session id carries the pod", session.id.startswith(pod + "_s-"),
          "id %s, pod %s" % (session.id, pod))
    result = session.execute("print(2**10)")
    check("execute print(2**10)", result.status == "exited" and result.stdout == "1024\n",
          "status %s stdout %r stderr %r" % (result.status, result.stdout, result.stderr[-300:]))
    # pid 1 of the code's pid namespace is sbx's init, never the pod's sbx serve.
    inside = session.execute(
        "import os; print(os.getuid(), open('/proc/1/cmdline', 'rb').read().split(b'\\0')[0])")
    uid, init = (inside.stdout.split(None, 1) + ["?", "?"])[:2]
    check("the code's sandbox: uid 1000, own pid namespace", uid == "1000" and "serve" not in init,
          "uid %s, pid 1 is %s" % (uid, init.strip()))

sys.exit(1 if failures else 0)
