#!/usr/bin/env python3
"""The network allowlist's costs, measured in one run against direct connections.

  python3 tools/net_bench.py [--sbx build/sbx] [--connections 200] [--megabytes 100] [--starts 20]
                             [--bulk-rounds 5]

Connection latency and bulk throughput against direct connections inside the test internet
(results: docs/performance.md). As in the network tests (tests/net/topology.h), network
namespace T plays the host that sbx and sbx-netd run on and U plays the internet, joined by a
veth pair; a TCP server in U serves "N\\n" -> N bytes. The same client runs directly in T
and inside `sbx run --allow ADDRESS:PORT` started in T (every connection captured in the sandbox's
namespace and relayed by sbx-netd), alternated --bulk-rounds times. The same is also measured
against a server on this host's own first non-loopback IPv4 address, where both ends share
loopback's speed and the relay's second TCP connection shows in full. Printed: the median and
p90 time per connection (connect, 1-byte request, 1-byte answer, close) and the added cost;
throughput of a bulk download (each client takes the median of three; the rounds' medians and
the median of their ratios); and the start-up of `sbx run -- /bin/true` with and without an
allowlist, alternated: both the whole run and the time until the program runs (a static
program prints CLOCK_MONOTONIC as its first act; the clock is the host's, sbx makes no time
namespace). Medians, not means: this machine is shared.
"""
import argparse
import json
import math
import os
import signal
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


# The small internet's addresses: documentation ones (RFC 5737), but not the tests' 192.0.2.0/24:
# a machine may sit on that network itself, which would make the host's rows confusing.
T_ADDRESS, U_ADDRESS, U_PORT = "198.51.100.1", "198.51.100.2", 9000


class SmallInternet:
    """Namespaces T (the host) and U (the internet) joined by a veth pair; a server in U."""

    def __init__(self):
        self.t, self.u = f"sbxbench-t-{os.getpid()}", f"sbxbench-u-{os.getpid()}"
        self.server = None

    def __enter__(self):
        try:
            for name in (self.t, self.u):
                subprocess.run(["ip", "netns", "add", name], check=True)
            subprocess.run(["ip", "link", "add", "veth-t", "netns", self.t, "type", "veth", "peer", "name", "veth-u",
                            "netns", self.u], check=True)
            for name, device, address in ((self.t, "veth-t", T_ADDRESS), (self.u, "veth-u", U_ADDRESS)):
                subprocess.run(["ip", "-n", name, "addr", "add", f"{address}/24", "dev", device], check=True)
                for link in ("lo", device):
                    subprocess.run(["ip", "-n", name, "link", "set", link, "up"], check=True)
            # The server ends when its stdin closes: with this process, however that ends.
            self.server = subprocess.Popen(self.inside(self.u, [sys.executable, __file__, "--serve", U_ADDRESS,
                                                                str(U_PORT)]),
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            if self.server.stdout.readline() != b"listening\n":
                sys.exit("net_bench: the server in the small internet did not start")
            return self
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *unused):
        if self.server:
            self.server.kill()
            self.server.wait()
        for name in (self.t, self.u):
            subprocess.run(["ip", "netns", "del", name], stderr=subprocess.DEVNULL)

    @staticmethod
    def inside(name, argv):
        # nsenter --net only: `ip netns exec` would also remount /sys, hiding the cgroup mounts.
        return ["nsenter", f"--net=/run/netns/{name}", *argv]

    def in_t(self, argv):
        return self.inside(self.t, argv)


def serve_forever(address, port):
    listener = socket.socket()
    listener.bind((address, port))
    listener.listen(512)
    threading.Thread(target=serve, args=(listener,), daemon=True).start()
    print("listening", flush=True)
    sys.stdin.read()  # EOF: the benchmark is gone


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
    return statistics.median(ordered), ordered[math.ceil(len(ordered) * 0.9) - 1]


def measure_connections(scratch, sbx, image, address, port, args, wrap=lambda argv: argv):
    """The client run directly and inside sbx run, alternated args.bulk_rounds times. Directly,
    it runs the image's own interpreter (chroot): this host's other Pythons differ (pyenv's
    received ~1.6x faster than Debian's 3.11 here), and that difference is not the sandbox's."""
    client = os.path.join(scratch, "client.py")
    client_args = [address, str(port), str(args.connections), str(args.megabytes)]
    def run_direct():
        with open(client) as source:
            direct.append(json.loads(subprocess.run(wrap(["chroot", image, "/usr/bin/python3", "-", *client_args]),
                                                    stdin=source, capture_output=True, text=True,
                                                    check=True).stdout))

    def run_sandboxed():
        log = os.path.join(scratch, f"n{time.monotonic_ns()}.jsonl")  # sbx refuses to overwrite one
        run = subprocess.run(
            wrap([sbx, "run", "--json", "--timeout", "600", "--memory", "1G", "--allow", f"{address}:{port}",
                  "--network-log", log, "--stdin", client, "--", "python3", "-", *client_args]),
            capture_output=True, text=True)
        result = json.loads(run.stdout)
        if result["status"] != "exited" or result["exit_code"] != 0:
            sys.exit(f"net_bench: the sandboxed client failed: {result['status']} {result['stderr'][-2000:]}")
        sandboxed.append(json.loads(result["stdout"]))

    direct, sandboxed = [], []
    for round_number in range(args.bulk_rounds):
        # Which goes first alternates: neither side always meets the other's leftovers.
        for measure in (run_direct, run_sandboxed) if round_number % 2 == 0 else (run_sandboxed, run_direct):
            measure()
    return direct, sandboxed


def print_connections(title, direct, sandboxed, args):
    d_ms = [ms for run in direct for ms in run["ms"]]
    s_ms = [ms for run in sandboxed for ms in run["ms"]]
    d_med, d_p90 = median_p90(d_ms)
    s_med, s_p90 = median_p90(s_ms)
    d_rate = statistics.median(run["mb_per_s"] for run in direct)
    s_rate = statistics.median(run["mb_per_s"] for run in sandboxed)
    ratio = statistics.median(s["mb_per_s"] / d["mb_per_s"] for d, s in zip(direct, sandboxed))
    print(f"{title}: {args.bulk_rounds} rounds of {args.connections} sequential connections and three "
          f"{args.megabytes} MB downloads, direct and sandboxed alternated")
    print(f"{'':34}{'direct':>10}{'allowlist':>12}{'added':>10}{'ratio':>8}   (ratio: allowlist / direct)")
    print(f"{'per connection, median (ms)':34}{d_med:10.3f}{s_med:12.3f}{s_med - d_med:10.3f}{s_med / d_med:8.2f}")
    print(f"{'per connection, p90 (ms)':34}{d_p90:10.3f}{s_p90:12.3f}{s_p90 - d_p90:10.3f}{s_p90 / d_p90:8.2f}")
    print(f"{'bulk download (MiB/s), median':34}{d_rate:10.0f}{s_rate:12.0f}{'':10}{s_rate / d_rate:8.2f}")
    rounds = ", ".join(f"{s['mb_per_s'] / d['mb_per_s']:.2f}" for d, s in zip(direct, sandboxed))
    print(f"{'  median of the rounds ratios':34}{'':32}{ratio:8.2f}   (each round: {rounds})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sbx", default=os.path.join(os.path.dirname(__file__), "..", "build", "sbx"))
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--bulk-rounds", type=int, default=5)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--serve", nargs=2, metavar=("ADDRESS", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve_forever(args.serve[0], int(args.serve[1]))
    # SIGTERM and SIGHUP unwind like Ctrl-C, so the namespaces are deleted on the way out.
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda *unused: sys.exit(f"net_bench: signal {unused[0]}"))
    sbx = os.path.abspath(args.sbx)
    image = subprocess.run([sbx, "image", "path"], capture_output=True, text=True, check=True).stdout.strip()

    address = host_address()
    listener = socket.socket()
    listener.bind((address, 0))
    listener.listen(512)
    port = listener.getsockname()[1]
    threading.Thread(target=serve, args=(listener,), daemon=True).start()

    with tempfile.TemporaryDirectory(prefix="sbx-net-bench-") as scratch:
        with open(os.path.join(scratch, "client.py"), "w") as f:
            f.write(CLIENT)
        os.chmod(scratch, 0o755)
        os.chmod(os.path.join(scratch, "client.py"), 0o644)
        with SmallInternet() as internet:
            internet_runs = measure_connections(scratch, sbx, image, U_ADDRESS, U_PORT, args, internet.in_t)
        host_runs = measure_connections(scratch, sbx, image, address, port, args)
        # Without cgroups in both modes: on a cgroup v1 host their RCU waits (10-13 ms, varying)
        # would drown the few ms the network mode adds.
        starts = {"none": [], "allowlist": []}
        to_program = {"none": [], "allowlist": []}
        stamp_dir = os.path.join(scratch, "stamp")
        os.mkdir(stamp_dir)
        os.chmod(stamp_dir, 0o755)
        build_stamp(stamp_dir)
        for start_number in range(args.starts):
            for mode in ("none", "allowlist") if start_number % 2 == 0 else ("allowlist", "none"):
                def network():  # a fresh log per run: sbx refuses to overwrite one
                    if mode == "none":
                        return []
                    log = os.path.join(scratch, f"s{time.monotonic_ns()}.jsonl")
                    return ["--allow", f"{address}:{port}", "--network-log", log]
                start = time.perf_counter()
                subprocess.run([sbx, "run", "--cgroup", "none", "--allow-degraded", "cgroup", *network(),
                                "--", "/bin/true"], check=True)
                starts[mode].append((time.perf_counter() - start) * 1000)
                start_ns = time.monotonic_ns()
                stamped = subprocess.run([sbx, "run", "--cgroup", "none", "--allow-degraded", "cgroup",
                                          "--workspace", stamp_dir, *network(), "--", "/workspace/stamp"],
                                         check=True, capture_output=True, text=True)
                to_program[mode].append((int(stamped.stdout) - start_ns) / 1e6)

    print_connections(f"small internet (T -> veth -> U, server {U_ADDRESS}:{U_PORT})",
                      *internet_runs, args)
    print()
    print_connections(f"this host (server {address}:{port}, both ends on loopback's speed)", *host_runs, args)
    print()
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
