"""The soak's kinds of run, through `sbx run --json` and through `sbx serve`: each runs one
hostile-but-bounded program and raises Unexpected when the result is not what sbx promises.

Every bomb is bounded and runs only inside a sandbox: fork bombs by --pids and a deadline,
allocations by a loop that stops at 512 MiB (above a small --memory), floods by a byte count.
"""
import contextlib
import json
import os
import signal
import subprocess
import time

import soak_host

# Bounded: stops at 64 x 8 MiB = 512 MiB, far above the limits it is run under.
ALLOCATE = "chunks = []\nfor _ in range(64):\n    chunks.append(b'x' * (8 << 20))\nprint('survived')"
FORK_BOMB = "f(){ f|f& }; f; wait"
FLOOD = "head -c 4194304 /dev/zero | tr '\\0' x"
# A parked process carrying the run's marker in its command line (sh stays: `; :` after sleep).
PARKED = "sh -c 'sleep 300; :' {m} >/dev/null 2>&1"
DAEMONS = ("import os, subprocess, sys\nm = sys.argv[1]\n"
           "for new_session in (False, True):\n"
           "    subprocess.Popen(['sh', '-c', 'sleep 300; :', m], start_new_session=new_session,\n"
           "                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
           "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
           "        os.execvp('sh', ['sh', '-c', 'sleep 300; :', m])\n    os._exit(0)\n"
           "print('spawned')")
NETWORK = ("import socket\ntry:\n    socket.create_connection(('denied.example', 443), timeout=5)\n"
           "    print('connected')\nexcept OSError as error:\n    print('refused', error)")


class Unexpected(Exception):
    """A result that is not what sbx promises for this kind of run."""


def expect(condition, what, result):
    if not condition:
        text = json.dumps(result)[:400] if not isinstance(result, str) else result[:400]
        raise Unexpected(f"{what}; got {text}")


def expect_gone(ctx, marker, grace=2.0):
    """Processes carrying `marker` must be gone once their run (or session) has ended."""
    deadline = time.monotonic() + grace
    while soak_host.live_with(marker.encode()):
        if time.monotonic() > deadline:
            raise Unexpected(f"left behind: processes {soak_host.live_with(marker.encode())} "
                             f"still carry {marker}")
        time.sleep(0.05)


# ---- through the CLI ---------------------------------------------------------------------

def cli(ctx, flags, argv, timeout=60):
    process = subprocess.Popen([ctx.sbx, "run", "--json", *flags, "--", *argv],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.runner_pids.add(process.pid)
    out, err = process.communicate(timeout=timeout)
    try:
        return process.returncode, json.loads(out)
    except ValueError:
        raise Unexpected(f"sbx run exit {process.returncode}, no JSON: {err[-300:]!r}")


def cli_exit(ctx):
    code, r = cli(ctx, [], ["sh", "-c", "echo ok"])
    expect(code == 0 and r["status"] == "exited" and r["stdout"] == "ok\n", "exit 0", r)


def cli_exit_nonzero(ctx):
    code, r = cli(ctx, [], ["sh", "-c", "echo no >&2; exit 3"])
    expect(code == 3 and r["exit_code"] == 3 and r["stderr"] == "no\n", "exit 3", r)


def cli_timeout(ctx):
    m = ctx.marker()
    code, r = cli(ctx, ["--timeout", "0.3"], ["sh", "-c", "sleep 300; :", m])
    expect(code == 124 and r["status"] == "timed_out", "timed out, exit 124", r)
    expect_gone(ctx, m)


def cli_oom(ctx):
    code, r = cli(ctx, ["--memory", "32M"], ["python3", "-c", ALLOCATE])
    expect(r["status"] == "oom_killed" and code == 137, "oom_killed under --memory 32M", r)


def cli_fork_bomb(ctx):
    m = ctx.marker()
    started = time.monotonic()
    code, r = cli(ctx, ["--pids", "32", "--timeout", "2"], ["sh", "-c", FORK_BOMB, m])
    expect(r["status"] in ("exited", "pids_limit", "timed_out"), "bomb bounded by pids", r)
    expect(time.monotonic() - started < 10, "bomb ended by its deadline", r)
    expect_gone(ctx, m)


def cli_daemons(ctx):
    m = ctx.marker()
    code, r = cli(ctx, [], ["python3", "-c", DAEMONS, m])
    expect(code == 0 and r["stdout"] == "spawned\n", "daemons spawned, exit 0", r)
    expect_gone(ctx, m)


def cli_flood(ctx):
    code, r = cli(ctx, ["--policy", ctx.flood_policy], ["sh", "-c", FLOOD + "; " + FLOOD + " >&2"])
    expect(code == 0 and r["stdout_truncated"] and r["stderr_truncated"], "both truncated", r)
    expect(len(r["stdout"]) <= 64 * 1024 + 256, "stdout within 64K", r["stdout"][:100])


def cli_allowlist(ctx):
    log = os.path.join(ctx.tmp, f"net-{ctx.marker()}.jsonl")
    code, r = cli(ctx, ["--allow", "allowed.invalid", "--network-log", log],
                  ["python3", "-c", NETWORK])
    os.unlink(log)
    expect(code == 0 and r["stdout"].startswith("refused"), "denied name refused", r)
    expect(r["network"]["mode"] == "allowlist" and r["network"]["denied"] >= 1,
           "netd counted the denial", r)


def cli_runner_killed(ctx):
    """SIGKILL the runner mid-run: its sandbox dies with it; a later sbx reaps the rest."""
    m = ctx.marker()
    process = subprocess.Popen([ctx.sbx, "run", "--json", "--", "sh", "-c", "sleep 300; :", m],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ctx.runner_pids.add(process.pid)
    deadline = time.monotonic() + 20
    while not soak_host.live_with(m.encode()):
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            process.wait()
            raise Unexpected(f"the sandboxed sleep never started (runner exit {process.poll()})")
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    ctx.last_runner_kill = time.monotonic()
    expect_gone(ctx, m, grace=5.0)


# ---- through the executor, owned by `sbx serve` --------------------------------------------

@contextlib.contextmanager
def session(ctx, body=None):
    """A session, ended (DELETE) when the block is left, also when a check failed in it."""
    status, created = ctx.server.request("POST", "/v1/sessions", body or {})
    expect(status == 201, "session created", created)
    failed = True
    try:
        yield created["id"]
        failed = False
    finally:
        status, body = ctx.server.request("DELETE", f"/v1/sessions/{created['id']}")
        if not failed:
            expect(status == 200, "session ended", body)


def execute(ctx, sid, code, **extra):
    body = {"code_blocks": [{"language": "python", "code": code}], **extra}
    status, r = ctx.server.request("POST", f"/v1/sessions/{sid}/execute", body)
    expect(status == 200, "execute answered 200", r)
    return r


def run_exec(ctx, sid, shell, **extra):
    status, r = ctx.server.request("POST", f"/v1/sessions/{sid}/exec", {"shell": shell, **extra})
    expect(status == 200, "exec answered 200", r)
    return r


def srv_session(ctx):
    with session(ctx) as sid:
        execute(ctx, sid, "x = 41")
        r = execute(ctx, sid, "print(x + 1)")
        expect(r["status"] == "exited" and r["stdout"] == "42\n", "state kept across executions", r)
        r = run_exec(ctx, sid, "echo hi; exit 3")
        expect(r["exit_code"] == 3 and r["stdout"] == "hi\n", "exec exit 3", r)


def srv_timeout(ctx):
    with session(ctx) as sid:
        r = execute(ctx, sid, "import time\ntime.sleep(300)", timeout=0.3)
        expect(r["status"] == "timed_out", "execution timed out", r)
        r = execute(ctx, sid, "print(1)")
        expect(r["status"] == "exited" and r["stdout"] == "1\n", "session usable after a timeout", r)


def srv_oom(ctx):
    with session(ctx) as sid:
        r = execute(ctx, sid, ALLOCATE)
        expect(r["status"] == "oom_killed", "oom_killed under the server's --memory", r)


def srv_fork_bomb(ctx):
    """The bomb's background forks outlive the exec, in the session, bounded by its --pids: the
    next execution runs, or reports the limit with the state lost and the one after it runs."""
    m = ctx.marker()
    with session(ctx) as sid:
        r = run_exec(ctx, sid, f"sh -c '{FORK_BOMB}' {m}", timeout=2)
        expect(r["status"] in ("exited", "pids_limit", "timed_out"), "bomb bounded by pids", r)
        r = execute(ctx, sid, "print(2)")
        if r["status"] == "pids_limit":
            expect(r["state_lost"], "a session lost to the pids limit says so", r)
            r = execute(ctx, sid, "print(2)")
        expect(r["status"] == "exited" and r["stdout"] == "2\n", "session usable after a bomb", r)
    expect_gone(ctx, m)


def srv_flood(ctx):
    with session(ctx) as sid:
        r = run_exec(ctx, sid, FLOOD)
        expect(r["stdout_truncated"] and len(r["stdout"]) < 4 << 20, "exec output truncated", r)
        r = execute(ctx, sid, "print('x' * (4 << 20))")
        expect(r["stdout_truncated"] or r["output_truncated"], "execute output truncated", r)


def srv_daemons(ctx):
    m = ctx.marker()
    with session(ctx) as sid:
        r = run_exec(ctx, sid, PARKED.format(m=m) + " & echo started")
        expect(r["exit_code"] == 0 and r["stdout"] == "started\n", "exec with a daemon", r)
        r = execute(ctx, sid, DAEMONS.replace("sys.argv[1]", repr(m)))
        expect(r["status"] == "exited" and "spawned" in r["stdout"], "execute with daemons", r)
    expect_gone(ctx, m)


def srv_cancel(ctx):
    """A client that disconnects mid-execution: the session's processes stop, it lives on."""
    m = ctx.marker()
    with session(ctx) as sid:
        body = json.dumps({"code_blocks": [{"language": "python", "code":
                           f"import subprocess\nsubprocess.run(['sh', '-c', 'sleep 300; :', {m!r}])"}]})
        connection = ctx.server.connection()
        connection.request("POST", f"/v1/sessions/{sid}/execute", body=body,
                           headers={"Content-Type": "application/json"})
        deadline = time.monotonic() + 20
        while not soak_host.live_with(m.encode()):
            expect(time.monotonic() < deadline, "the execution started", m)
            time.sleep(0.02)
        connection.close()
        expect_gone(ctx, m, grace=5.0)
        r = execute(ctx, sid, "print(3)")
        expect(r["status"] == "exited" and r["stdout"] == "3\n", "session usable after cancel", r)


def srv_run(ctx):
    status, r = ctx.server.request("POST", "/v1/run", {"argv": ["sh", "-c", "echo ok; exit 5"]})
    expect(status == 200 and r["status"] == "exited" and r["exit_code"] == 5
           and r["stdout"] == "ok\n", "one-shot run through the server, exit 5", r)


# kind -> (function, weight): cheap kinds weigh more; the mix is shuffled with a logged seed.
KINDS = {
    "cli_exit": (cli_exit, 4), "cli_exit_nonzero": (cli_exit_nonzero, 3),
    "cli_timeout": (cli_timeout, 2), "cli_oom": (cli_oom, 1), "cli_fork_bomb": (cli_fork_bomb, 1),
    "cli_daemons": (cli_daemons, 2), "cli_flood": (cli_flood, 1),
    "cli_allowlist": (cli_allowlist, 2), "cli_runner_killed": (cli_runner_killed, 1),
    "srv_session": (srv_session, 4), "srv_timeout": (srv_timeout, 1), "srv_oom": (srv_oom, 1),
    "srv_fork_bomb": (srv_fork_bomb, 1), "srv_flood": (srv_flood, 1),
    "srv_daemons": (srv_daemons, 2), "srv_cancel": (srv_cancel, 1), "srv_run": (srv_run, 2),
}
