#!/usr/bin/python3
"""The servers of the "small internet" the network tests talk to (tests/net/small_internet.h).

  servers.py certs    --dir D --names a.test,b.test   test CA + one leaf per name (openssl CLI)
  servers.py internet --config F                      every server in netns U
  servers.py canary   --config F                      the canary on T's own loopback
  servers.py blob-sha256 --size N                     sha256 of what GET /blob/N returns

The config (JSON, written by the C++ harness, the one source of addresses and ports) names
the hosts, the ports, the cert dir and two files: `events` (JSON lines appended, one per
connection, request, datagram or DNS query: how tests count what reached "the internet") and
`ready` (created once every socket listens). Standard library only; the host's python3.
"""

import argparse
import base64
import hashlib
import json
import os
import selectors
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

IO_TIMEOUT_S = 10  # no client of these servers may hold a thread longer


class Events:
    """Appends one JSON line per event; O_APPEND keeps lines whole across threads and processes."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def log(self, **fields):
        fields["ts"] = round(time.time(), 6)
        os.write(self.fd, (json.dumps(fields, sort_keys=True) + "\n").encode())


# --- certificates -------------------------------------------------------------------------

def openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=30)


def make_certs(directory, names):
    ca_key, ca_pem = os.path.join(directory, "ca.key"), os.path.join(directory, "ca.pem")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", ca_key, "-out", ca_pem, "-days", "2", "-subj", "/CN=sbx small internet CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name in names:
        key, csr, pem = (os.path.join(directory, name + ext) for ext in (".key", ".csr", ".pem"))
        ext_file = os.path.join(directory, name + ".ext")
        with open(ext_file, "w") as f:
            f.write(f"subjectAltName=DNS:{name}\nextendedKeyUsage=serverAuth\n"
                    "basicConstraints=critical,CA:FALSE\n"
                    "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n")
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", key, "-out", csr, "-subj", "/CN=" + name)
        openssl("x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key, "-CAcreateserial",
                "-days", "2", "-out", pem, "-extfile", ext_file)


def server_context(cert_dir, name):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(cert_dir, name + ".pem"),
                            os.path.join(cert_dir, name + ".key"))

    def remember_sni(sock, server_name, _context):
        sock.sbx_sni = server_name  # read back by the handler that logs the request
    context.sni_callback = remember_sni
    return context


# --- DNS ----------------------------------------------------------------------------------

QTYPES = {1: "A", 16: "TXT", 28: "AAAA", 64: "SVCB", 65: "HTTPS"}


def parse_query(data):
    """(id, flags, qname, qtype, end of question) of a DNS query, or None if malformed."""
    if len(data) < 12:
        return None
    query_id, flags, qdcount = struct.unpack("!HHH", data[:6])
    if qdcount != 1:
        return None
    labels, i = [], 12
    while i < len(data) and data[i] != 0:
        length = data[i]
        if length > 63 or i + 1 + length > len(data):
            return None
        labels.append(data[i + 1:i + 1 + length].decode("ascii", "replace"))
        i += 1 + length
    if i + 5 > len(data):
        return None
    qtype = struct.unpack("!H", data[i + 1:i + 3])[0]
    return query_id, flags, ".".join(labels).lower(), qtype, i + 5


class Zone:
    """What "the internet's" resolver answers. rebind.test alternates between a public and an
    internal address with TTL 0 (a rebinding attack); anything under evil.test resolves, so
    exfiltration through DNS would work; other names are NXDOMAIN."""

    def __init__(self, hosts):
        self.by_name = {h["name"]: h["addr"] for h in hosts if ":" not in h["addr"]}
        self.v6_by_name = {h["name"]: h["addr"] for h in hosts if ":" in h["addr"]}
        self.rebind_count = 0
        self.lock = threading.Lock()

    def records(self, qname, qtype):
        """(rcode, [(type, ttl, rdata)])"""
        if qname == "rebind.test":
            if qtype != 1:
                return 0, []
            with self.lock:
                self.rebind_count += 1
                public = self.rebind_count % 2 == 1
            addr = self.by_name["rebind.test"] if public else self.by_name["internal.test"]
            return 0, [(1, 0, socket.inet_aton(addr))]
        if qname == "evil.test" or qname.endswith(".evil.test"):
            if qtype == 1:
                return 0, [(1, 60, socket.inet_aton(self.by_name["evil.test"]))]
            if qtype == 16:
                return 0, [(16, 60, b"\x0bexfil-heard")]
            return 0, []
        if qname in self.by_name:
            if qtype == 1:
                return 0, [(1, 60, socket.inet_aton(self.by_name[qname]))]
            if qtype == 28:
                return 0, [(28, 60, socket.inet_pton(socket.AF_INET6, self.v6_by_name["v6.test"]))]
            if qtype == 65:
                return 0, [(65, 60, b"\x00\x01\x00")]  # priority 1, target "." (ServiceMode)
            return 0, []
        return 3, []

    def answer(self, data):
        parsed = parse_query(data)
        if parsed is None:
            return None, None
        query_id, flags, qname, qtype, end = parsed
        rcode, records = self.records(qname, qtype)
        header = struct.pack("!HHHHHH", query_id, 0x8000 | (flags & 0x0100) | 0x0400 | rcode,
                             1, len(records), 0, 0)
        answers = b"".join(struct.pack("!HHHIH", 0xC00C, rtype, 1, ttl, len(rdata)) + rdata
                           for rtype, ttl, rdata in records)
        return header + data[12:end] + answers, (qname, QTYPES.get(qtype, str(qtype)))


# --- TCP servers --------------------------------------------------------------------------

class HttpHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sbx-small-internet"

    def log_message(self, *_args):
        pass

    def do_GET(self):
        s = self.server_info
        self.events.log(kind="request", server=s["name"], addr=s["addr"], port=s["port"],
                        method="GET", path=self.path, host=self.headers.get("Host"),
                        sni=getattr(self.connection, "sbx_sni", None))
        url = urllib.parse.urlsplit(self.path)
        if url.path.startswith("/blob/"):
            body = blob(int(url.path[len("/blob/"):]))
            kind = "application/octet-stream"
        elif url.path == "/dns-query":
            query = base64.urlsafe_b64decode(
                urllib.parse.parse_qs(url.query)["dns"][0] + "==")
            body, _ = self.zone.answer(query)
            kind = "application/dns-message"
        else:
            body = s["name"].encode()
            kind = "text/plain"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Served-By", s["name"])
        self.end_headers()
        self.wfile.write(body)


_blobs = {}


def blob(size):
    """The same bytes for a size in every process: SHAKE-256 of a fixed seed."""
    if size not in _blobs:
        _blobs[size] = hashlib.shake_256(b"sbx small internet blob").digest(size)
    return _blobs[size]


def serve_connection(conn, peer, service, ctx):
    s, events = service, ctx["events"]
    conn.settimeout(IO_TIMEOUT_S)
    events.log(kind="conn", server=s["name"], addr=s["addr"], port=s["port"], proto=s["proto"],
               peer=peer[0])
    try:
        if s["proto"] in ("https", "dot"):
            conn = s["tls"].wrap_socket(conn, server_side=True)
        if s["proto"] in ("http", "https"):
            handler = type("Handler", (HttpHandler,), {"server_info": s, "events": events,
                                                       "zone": ctx["zone"]})
            handler(conn, peer, None)
        elif s["proto"] == "banner":
            conn.sendall(f"{s['banner']} {s['name']}\r\n".encode())
            conn.recv(1)  # until the client closes or the timeout
        elif s["proto"] == "dot":
            length = struct.unpack("!H", recv_exact(conn, 2))[0]
            reply, question = ctx["zone"].answer(recv_exact(conn, length))
            events.log(kind="dns", server=s["name"], addr=s["addr"], port=s["port"],
                       transport="tls", qname=question[0], qtype=question[1])
            conn.sendall(struct.pack("!H", len(reply)) + reply)
    except (OSError, ssl.SSLError, ValueError):
        pass
    finally:
        conn.close()


def recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ValueError("short read")
        data += chunk
    return data


def listen(proto, addr, port):
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM if proto == "udp" else socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((addr, port))
    if proto != "udp":
        sock.listen(512)
    sock.setblocking(False)
    return sock


def services(config):
    """(socket, service) for every listener the config asks for."""
    out, cert_dir = [], config["cert_dir"]
    for host in config.get("hosts", []):
        name, addr = host["name"], host["addr"]
        for proto, ports in (("http", config["http_ports"]), ("https", config["https_ports"])):
            for port in ports:
                service = {"proto": proto, "name": name, "addr": addr, "port": port}
                if proto == "https":
                    service["tls"] = server_context(cert_dir, name)
                out.append((listen("tcp", addr, port), service))
        for port, banner in config["banner_ports"].items():
            out.append((listen("tcp", addr, int(port)),
                        {"proto": "banner", "name": name, "addr": addr, "port": int(port),
                         "banner": banner}))
    for sink in config.get("udp_sinks", []):
        out.append((listen("udp", sink["addr"], sink["port"]),
                    {"proto": "udp", "name": sink["name"], "addr": sink["addr"],
                     "port": sink["port"]}))
    if "dns" in config:
        dns = config["dns"]
        out.append((listen("udp", dns["addr"], 53),
                    {"proto": "dns", "name": dns["name"], "addr": dns["addr"], "port": 53}))
        out.append((listen("tcp", dns["addr"], dns["dot_port"]),
                    {"proto": "dot", "name": dns["name"], "addr": dns["addr"],
                     "port": dns["dot_port"],
                     "tls": server_context(cert_dir, dns["name"])}))
    return out


def serve(config, listeners):
    ctx = {"events": Events(config["events"]), "zone": Zone(config.get("zone_hosts", []))}
    selector = selectors.DefaultSelector()
    for sock, service in listeners:
        selector.register(sock, selectors.EVENT_READ, service)
    with open(config["ready"] + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(config["ready"] + ".tmp", config["ready"])
    while True:
        for key, _ in selector.select():
            sock, service = key.fileobj, key.data
            if service["proto"] in ("udp", "dns"):
                serve_datagram(sock, service, ctx)
                continue
            try:
                conn, peer = sock.accept()
            except BlockingIOError:
                continue
            conn.setblocking(True)
            threading.Thread(target=serve_connection, args=(conn, peer, service, ctx),
                             daemon=True).start()


def serve_datagram(sock, service, ctx):
    try:
        data, peer = sock.recvfrom(4096)
    except BlockingIOError:
        return
    s, events = service, ctx["events"]
    if s["proto"] == "udp":
        events.log(kind="datagram", server=s["name"], addr=s["addr"], port=s["port"],
                   peer=peer[0])
        sock.sendto(f"udp-sink {s['name']}:{s['port']}".encode(), peer)
        return
    reply, question = ctx["zone"].answer(data)
    events.log(kind="dns", server=s["name"], addr=s["addr"], port=53, transport="udp",
               qname=question[0] if question else None,
               qtype=question[1] if question else None, peer=peer[0])
    if reply is not None:
        sock.sendto(reply, peer)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["certs", "internet", "canary", "blob-sha256"])
    parser.add_argument("--dir")
    parser.add_argument("--names")
    parser.add_argument("--config")
    parser.add_argument("--size", type=int)
    args = parser.parse_args()
    if args.role == "blob-sha256":
        print(hashlib.sha256(blob(args.size)).hexdigest())
        return
    if args.role == "certs":
        make_certs(args.dir, args.names.split(","))
        return
    with open(args.config) as f:
        config = json.load(f)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    serve(config, services(config))


if __name__ == "__main__":
    sys.exit(main())
