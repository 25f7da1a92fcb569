"""The soak (tools/soak.sh N): N mixed runs through `sbx run` and a long-lived `sbx serve`, then
the proof that nothing is left on the host and that the server's fds and memory stayed flat.

Standard library only. Exit 0 when every run got the result sbx promises and nothing leaked.
"""
import argparse
import collections
import http.client
import itertools
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import soak_cases
import soak_host

STALE_WORKSPACE_SECONDS = 60  # sandbox/workspace/workspace.cc: younger stale workspaces are left alone
FD_BOUND = 4                  # server fds may differ by this much between warm-up and end
RSS_BOUND_KIB = 16 * 1024     # and its RSS may grow by this much


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=120):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


class Server:
    """`sbx serve` on a private Unix socket: the executor's long-lived owner."""

    def __init__(self, sbx, tmp):
        self.socket_path = os.path.join(tmp, "run", "sbx.sock")
        self.log_path = os.path.join(tmp, "serve.log")
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                [sbx, "serve", "--listen", "unix:" + self.socket_path, "--pool", "2",
                 "--memory", "256M", "--pids", "64", "--max-sessions", "16"],
                stdout=log, stderr=subprocess.STDOUT, env={"PATH": os.environ.get("PATH", "")})
        deadline = time.monotonic() + 90
        while "sbx serve: ready" not in self.log():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("sbx serve did not start: " + self.log()[-2000:])
            time.sleep(0.1)

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def connection(self):
        return UnixConnection(self.socket_path)

    def request(self, method, path, body=None):
        connection = self.connection()
        try:
            data = json.dumps(body).encode() if body is not None else None
            connection.request(method, path, body=data,
                               headers={"Content-Type": "application/json"} if data else {})
            response = connection.getresponse()
            payload = response.read()
            if response.getheader("Content-Type", "").startswith("application/json"):
                payload = json.loads(payload)
            return response.status, payload
        finally:
            connection.close()

    def quiesce(self, timeout=30):
        """Waits until no session is active and the pool is refilled (a stable point to measure)."""
        deadline = time.monotonic() + timeout
        while True:
            _, health = self.request("GET", "/v1/health")
            if health["sessions"]["active"] == 0 and health["pool"]["warm"] == health["pool"]["size"]:
                return health
            if time.monotonic() > deadline:
                return health
            time.sleep(0.1)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return "killed after 60 s"


class Context:
    def __init__(self, sbx, tmp, server):
        self.sbx, self.tmp, self.server = sbx, tmp, server
        self.nonce = f"sbx-soak-{os.getpid()}-{random.randrange(1 << 32):08x}"
        self.runner_pids = {server.process.pid}
        self.last_runner_kill = None
        self.flood_policy = os.path.join(tmp, "flood.json")
        with open(self.flood_policy, "w") as f:
            json.dump({"limits": {"output": "64K"}}, f)
        self._counter = itertools.count()

    def marker(self):
        return f"{self.nonce}-{next(self._counter)}"


def run_batch(ctx, kinds, jobs, tally, failures, deadline=None):
    queue = collections.deque(kinds)
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not queue or (deadline and time.monotonic() > deadline):
                    return
                kind = queue.popleft()
            started = time.monotonic()
            try:
                soak_cases.KINDS[kind][0](ctx)
                error = None
            except soak_cases.Unexpected as unexpected:
                error = str(unexpected)
            except Exception:  # a crash of the soak itself is a failure too, with its trace
                error = traceback.format_exc(limit=3)
            with lock:
                tally[kind][0] += 1
                tally[kind][1] += time.monotonic() - started
                done = sum(t[0] for t in tally.values())
                if done % 1000 == 0:
                    print(f"soak: {done} runs, {len(failures)} failed", flush=True)
                if error:
                    tally[kind][2] += 1
                    failures.append((kind, error))
                    print(f"FAIL {kind}: {error}", file=sys.stderr, flush=True)

    threads = [threading.Thread(target=worker) for _ in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", type=int)
    parser.add_argument("--sbx", required=True)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--minutes", type=float, default=None,
                        help="start no run after this many minutes (the summary counts what ran)")
    parser.add_argument("--shared-host", action="store_true",
                        help="new veths, named netns and nsfs mounts are other tools' (notes)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    rng = random.Random(seed)
    names = list(soak_cases.KINDS)
    weights = [soak_cases.KINDS[n][1] for n in names]
    # Every kind once first (the warm-up sees each), then the weighted mix.
    kinds = rng.sample(names, len(names))[:args.runs]
    kinds += rng.choices(names, weights, k=args.runs - len(kinds))
    # Killed runners in the first half: their workspaces age towards the 60 s a later sbx waits
    # before reaping them while the rest runs.
    cut = len(kinds) // 2
    for i in range(cut, len(kinds)):
        if kinds[i] == "cli_runner_killed":
            j = rng.randrange(cut)
            kinds[i], kinds[j] = kinds[j], kinds[i]
    warm = min(args.runs, max(50, args.runs // 10))
    print(f"soak: {args.runs} runs, {args.jobs} at a time, seed {seed}", flush=True)

    baseline = soak_host.snapshot()
    tmp = tempfile.mkdtemp(prefix="soak-")
    began = time.monotonic()
    server = Server(args.sbx, tmp)
    ctx = Context(args.sbx, tmp, server)
    tally = collections.defaultdict(lambda: [0, 0.0, 0])
    failures = []
    run_batch(ctx, kinds[:warm], args.jobs, tally, failures)
    server.quiesce()
    warm_usage = soak_host.usage(server.process.pid)
    deadline = began + args.minutes * 60 if args.minutes else None
    run_batch(ctx, kinds[warm:], args.jobs, tally, failures, deadline)
    health = server.quiesce()
    end_usage = soak_host.usage(server.process.pid)
    _, listed = server.request("GET", "/v1/sessions")
    stopped = server.stop()
    elapsed = time.monotonic() - began

    if ctx.last_runner_kill is not None:
        wait = ctx.last_runner_kill + STALE_WORKSPACE_SECONDS + 1 - time.monotonic()
        if wait > 0:
            print(f"soak: waiting {wait:.0f} s: a killed runner's workspace is reaped only once "
                  f"it is {STALE_WORKSPACE_SECONDS} s old", flush=True)
            time.sleep(wait)
    # The next sbx reaps what killed runners left (their cgroups and old workspaces).
    sweep = subprocess.run([args.sbx, "run", "--", "true"], capture_output=True)
    left, host, foreign = soak_host.leaks(baseline, ctx.runner_pids, ctx.nonce.encode())
    shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nsoak: {sum(t[0] for t in tally.values())} runs in {elapsed:.0f} s (seed {seed})")
    print(f"{'kind':<20} {'runs':>6} {'failed':>6} {'mean s':>7}")
    for kind in names:
        count, seconds, failed = tally[kind]
        print(f"{kind:<20} {count:>6} {failed:>6} {seconds / max(count, 1):>7.2f}")
    unexpected = len(failures)
    for kind, error in failures[:20]:
        print(f"  failed {kind}: {error}")
    fd_delta, rss_delta = end_usage[0] - warm_usage[0], end_usage[1] - warm_usage[1]
    flat = fd_delta <= FD_BOUND and rss_delta <= RSS_BOUND_KIB
    print(f"server fds {warm_usage[0]} after warm-up ({warm} runs), {end_usage[0]} at the end "
          f"(bound +{FD_BOUND}); RSS {warm_usage[1]} KiB -> {end_usage[1]} KiB "
          f"({rss_delta:+d} KiB, bound +{RSS_BOUND_KIB}): {'flat' if flat else 'GREW'}")
    problems = [] if flat else ["server fds or RSS grew"]
    if listed.get("sessions"):
        problems.append(f"server still lists {len(listed['sessions'])} sessions")
    if health["sessions"]["active"]:
        problems.append(f"{health['sessions']['active']} sessions still active at the end")
    if stopped != 0:
        problems.append(f"sbx serve exited {stopped} on SIGTERM")
    if sweep.returncode != 0:
        problems.append(f"the sweeping sbx run exited {sweep.returncode}: {sweep.stderr[-200:]!r}")
    for check, items in left.items():
        print(f"leak check {check}: {'none' if not items else len(items)}")
        for item in items[:10]:
            print(f"    {item}")
        if items:
            problems.append(f"left behind: {check}")
    for check, items in host.items():
        label = "note (another tool's?)" if args.shared_host else "leak check"
        print(f"{label} {check}: {'none' if not items else len(items)}")
        for item in items[:10]:
            print(f"    {item}")
        if items and not args.shared_host:
            problems.append(f"new on the host: {check}")
    if foreign:
        print(f"note: {len(foreign)} stale sbx cgroups of runners not ours: {foreign[:5]}")
    if unexpected:
        problems.append(f"{unexpected} unexpected results")
    print("soak: " + ("PASS" if not problems else "FAIL: " + "; ".join(problems)))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
