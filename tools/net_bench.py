#!/usr/bin/env python3
"""The network allowlist's costs, measured in one run against direct connections.

  python3 tools/net_bench.py [--sbx build/sbx] [--connections 200] [--megabytes 100] [--starts 20]

A TCP server on this host's first non-loopback IPv4 address serves "N\\n" -> N bytes. The same
client runs directly on the host and inside `sbx run --allow ADDRESS:PORT` (every connection
captured in the sandbox's namespace and relayed by sbx-netd). Printed: the median and p90 time
per connection (connect, 1-byte request, 1-byte answer, close) and the added cost; throughput
of a bulk download (the median of three); and the start-up of `sbx run -- /bin/true` with and without an
allowlist, alternated: both the whole run and the time until the program runs (a static
program prints CLOCK_MONOTONIC as its first act; the clock is the host's, sbx makes no time
namespace). Medians, not means: this machine is shared.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

CLIENT = r'''
import json, socket, sys, time
host, port, count, megabytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
buffer = bytearray(1 << 20)  # reused: the client's own copying stays out of the figures
def fetch(size):
    s = socket.create_connection((host, port), timeout=30)
    s.sendall(b"%d\n" % size)
    got = 0
    while True:
        n = s.recv_into(buffer)
        if not n:
            break
        got += n
    s.close()
    return got
per_connection = []
for _ in range(count):
    start = time.perf_counter()
    assert fetch(1) == 1
    per_connection.append((time.perf_counter() - start) * 1000)
rates = []
for _ in range(3):  # the median of three: one download is at the mercy of the scheduler
    start = time.perf_counter()
    size = megabytes << 20
    assert fetch(size) == size
    rates.append(megabytes / (time.perf_counter() - start))
print(json.dumps({"ms": per_connection, "mb_per_s": sorted(rates)[1]}))
'''


def host_address():
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True,
                         text=True, check=True).stdout.split()
    for i, word in enumerate(out):
        if word == "inet":
            return out[i + 1].split("/")[0]
    sys.exit("net_bench: no non-loopback IPv4 address on this host to serve from")


def serve(listener):
    def answer(conn):
        with conn:
            line = b""
            while not line.endswith(b"\n"):
                chunk = conn.recv(64)
                if not chunk:
                    return
                line += chunk
            remaining = int(line)
            block = memoryview(b"x" * (1 << 20))  # slices of a memoryview copy nothing
            while remaining > 0:
                sent = conn.send(block[:min(remaining, len(block))])
                remaining -= sent
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=answer, args=(conn,), daemon=True).start()


# The first thing the sandboxed program does: say when it started.
STAMP_C = r'''
#include <stdio.h>
#include <time.h>
int main(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  printf("%lld\n", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
  return 0;
}
'''


def build_stamp(directory):
    source = os.path.join(directory, "stamp.c")
    with open(source, "w") as f:
        f.write(STAMP_C)
    binary = os.path.join(directory, "stamp")
    subprocess.run(["cc", "-static", "-O2", "-o", binary, source], check=True)
    os.chmod(binary, 0o755)
    return binary


def median_p90(values):
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.9) - 1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sbx", default=os.path.join(os.path.dirname(__file__), "..", "build", "sbx"))
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--starts", type=int, default=20)
    args = parser.parse_args()

    address = host_address()
    listener = socket.socket()
    listener.bind((address, 0))
    listener.listen(512)
    port = listener.getsockname()[1]
    threading.Thread(target=serve, args=(listener,), daemon=True).start()

    with tempfile.TemporaryDirectory(prefix="sbx-net-bench-") as scratch:
        client = os.path.join(scratch, "client.py")
        with open(client, "w") as f:
            f.write(CLIENT)
        os.chmod(scratch, 0o755)
        os.chmod(client, 0o644)
        client_args = [address, str(port), str(args.connections), str(args.megabytes)]
        direct = json.loads(subprocess.run([sys.executable, client] + client_args, capture_output=True,
                                           text=True, check=True).stdout)
        log = os.path.join(scratch, "network.jsonl")
        sandboxed_run = subprocess.run(
            [args.sbx, "run", "--json", "--timeout", "600", "--memory", "1G", "--allow", f"{address}:{port}",
             "--network-log", log, "--stdin", client, "--", "python3", "-", *client_args],
            capture_output=True, text=True)
        result = json.loads(sandboxed_run.stdout)
        if result["status"] != "exited" or result["exit_code"] != 0:
            sys.exit(f"net_bench: the sandboxed client failed: {result['status']} {result['stderr'][-2000:]}")
        sandboxed = json.loads(result["stdout"])

        # Without cgroups in both modes: on a cgroup v1 host their RCU waits (10-13 ms, varying)
        # would drown the few ms the network mode adds.
        starts = {"none": [], "allowlist": []}
        to_program = {"none": [], "allowlist": []}
        stamp_dir = os.path.join(scratch, "stamp")
        os.mkdir(stamp_dir)
        os.chmod(stamp_dir, 0o755)
        build_stamp(stamp_dir)
        for _ in range(args.starts):
            for mode in ("none", "allowlist"):
                def network():  # a fresh log per run: sbx refuses to overwrite one
                    if mode == "none":
                        return []
                    log = os.path.join(scratch, f"s{time.monotonic_ns()}.jsonl")
                    return ["--allow", f"{address}:{port}", "--network-log", log]
                start = time.perf_counter()
                subprocess.run([args.sbx, "run", "--cgroup", "none", "--allow-degraded", "cgroup", *network(),
                                "--", "/bin/true"], check=True)
                starts[mode].append((time.perf_counter() - start) * 1000)
                start_ns = time.monotonic_ns()
                stamped = subprocess.run([args.sbx, "run", "--cgroup", "none", "--allow-degraded", "cgroup",
                                          "--workspace", stamp_dir, *network(), "--", "/workspace/stamp"],
                                         check=True, capture_output=True, text=True)
                to_program[mode].append((int(stamped.stdout) - start_ns) / 1e6)

    d_med, d_p90 = median_p90(direct["ms"])
    s_med, s_p90 = median_p90(sandboxed["ms"])
    print(f"server {address}:{port}; {args.connections} sequential connections, one {args.megabytes} MB download")
    print(f"{'':34}{'direct':>10}{'allowlist':>12}{'added':>10}{'ratio':>8}")
    print(f"{'per connection, median (ms)':34}{d_med:10.3f}{s_med:12.3f}{s_med - d_med:10.3f}{s_med / d_med:8.2f}")
    print(f"{'per connection, p90 (ms)':34}{d_p90:10.3f}{s_p90:12.3f}{s_p90 - d_p90:10.3f}{s_p90 / d_p90:8.2f}")
    print(f"{'bulk download (MB/s)':34}{direct['mb_per_s']:10.0f}{sandboxed['mb_per_s']:12.0f}{'':10}"
          f"{sandboxed['mb_per_s'] / direct['mb_per_s']:8.2f}")
    n_med, a_med = statistics.median(starts["none"]), statistics.median(starts["allowlist"])
    paired = statistics.median(a - n for n, a in zip(starts["none"], starts["allowlist"]))
    print(f"{'sbx run /bin/true, median (ms)':34}{n_med:10.2f}{a_med:12.2f}{a_med - n_med:10.2f}{a_med / n_med:8.2f}"
          f"   (network none vs allowlist, {args.starts} each, alternated, no cgroups)")
    print(f"{'  added, median of the pairs (ms)':34}{'':22}{paired:10.2f}")
    n_med, a_med = statistics.median(to_program["none"]), statistics.median(to_program["allowlist"])
    paired = statistics.median(a - n for n, a in zip(to_program["none"], to_program["allowlist"]))
    print(f"{'until the program runs (ms)':34}{n_med:10.2f}{a_med:12.2f}{a_med - n_med:10.2f}{a_med / n_med:8.2f}"
          f"   (sbx run to the program's first instruction)")
    print(f"{'  added, median of the pairs (ms)':34}{'':22}{paired:10.2f}")


if __name__ == "__main__":
    main()
