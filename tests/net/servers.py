#!/usr/bin/python3
"""The servers of the "small internet" the network tests talk to (tests/net/small_internet.h).

  servers.py certs    --dir D --names a.test,b.test [--rogue-names c.test]
                                                      test CA + one leaf per name, and a
                                                      rogue CA signing c.test (openssl CLI)
  servers.py internet --config F                      every server in netns U
  servers.py canary   --config F                      the canary on T's own loopback
  servers.py blob-sha256 --size N                     sha256 of what GET /blob/N returns
  servers.py wheel    --dir D                         the index's test wheel (pypi_index.py)

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

sys.dont_write_bytecode = True  # no __pycache__ in the source tree the tests run from
import pypi_index  # noqa: E402

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


def make_ca(directory, stem, common_name):
    """stem.key and stem.pem: a self-signed P-256 CA."""
    key, pem = os.path.join(directory, stem + ".key"), os.path.join(directory, stem + ".pem")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", pem, "-days", "2", "-subj", "/CN=" + common_name,
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return key, pem


def make_leaf(directory, name, ca_key, ca_pem):
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


def make_certs(directory, names, rogue_names):
    """ca.pem signs a leaf per name; rogue-ca.pem, a second CA no client trusts unless told
    to, signs the leaves of rogue_names (hosts whose certificate must fail verification)."""
    ca_key, ca_pem = make_ca(directory, "ca", "sbx small internet CA")
    for name in names:
        make_leaf(directory, name, ca_key, ca_pem)
    rogue_key, rogue_pem = make_ca(directory, "rogue-ca", "sbx small internet rogue CA")
    for name in rogue_names:
        make_leaf(directory, name, rogue_key, rogue_pem)


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
    internal address with TTL 0 (a rebinding attack); flip.test alternates between api.test's
    and cdn.test's addresses with TTL 0 (a record that changes); anything under evil.test
    resolves, so exfiltration through DNS would work; other names are NXDOMAIN."""

    def __init__(self, hosts):
        self.by_name = {h["name"]: h["addr"] for h in hosts if ":" not in h["addr"]}
        self.v6_by_name = {h["name"]: h["addr"] for h in hosts if ":" in h["addr"]}
        # Names whose AAAA query gets no answer (the others get v6.test's address).
        self.v4_only = {h["name"] for h in hosts if h.get("v4_only")}
        # Names whose A record alternates between two hosts' addresses (TTL 0), with the
        # number of A queries each has had.
        self.alternating = {"rebind.test": ("rebind.test", "internal.test"),
                            "flip.test": ("api.test", "cdn.test")}
        self.queries = {name: 0 for name in self.alternating}
        self.lock = threading.Lock()

    def records(self, qname, qtype):
        """(rcode, [(type, ttl, rdata)])"""
        if qname in self.alternating:
            if qtype != 1:
                return 0, []
            with self.lock:
                self.queries[qname] += 1
                first = self.queries[qname] % 2 == 1
            addr = self.by_name[self.alternating[qname][0 if first else 1]]
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
            if qtype == 28 and qname not in self.v4_only:
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

    MAX_BODY = 1 << 20  # request bodies are read (and dropped) up to this size

    def handle_request(self):
        s = self.server_info
        # The Authorization and X-Api-Key values are recorded here, in U, so secret-injection
        # tests can see what arrived upstream; they are never sent back to the client.
        self.events.log(kind="request", server=s["name"], addr=s["addr"], port=s["port"],
                        method=self.command, path=self.path, host=self.headers.get("Host"),
                        sni=getattr(self.connection, "sbx_sni", None),
                        authorization=self.headers.get("Authorization"),
                        x_api_key=self.headers.get("X-Api-Key"))
        length = int(self.headers.get("Content-Length") or 0)
        if length > self.MAX_BODY:
            self.reply(413, "text/plain", b"request body too large\n")
            return
        if length:
            self.rfile.read(length)
        url = urllib.parse.urlsplit(self.path)
        page = self.index.get(url.path) if s["name"] == self.index_host else None
        if page is not None:
            self.reply(*page)
        elif url.path == "/echo":
            # Header names only: a value could be a secret netd injected.
            body = json.dumps({"method": self.command, "path": self.path,
                               "headers": sorted(self.headers.keys())}, sort_keys=True).encode()
            self.reply(200, "application/json", body)
        elif url.path.startswith("/blob/"):
            self.reply(200, "application/octet-stream", blob(int(url.path[len("/blob/"):])))
        elif url.path == "/linger":
            self.reply(200, "text/plain", s["name"].encode())
            self.log_what_follows()
        elif url.path == "/dns-query":
            query = base64.urlsafe_b64decode(
                urllib.parse.parse_qs(url.query)["dns"][0] + "==")
            body, _ = self.zone.answer(query)
            self.reply(200, "application/dns-message", body)
        else:
            self.reply(200, "text/plain", s["name"].encode())

    LINGER_S = 1.0

    def log_what_follows(self):
        """After the reply: whatever else the client's side sends on this connection within
        LINGER_S (a next request a proxy should not have relayed), as an "after_reply" event;
        then the connection closes."""
        self.connection.settimeout(self.LINGER_S)
        data = b""
        try:
            while len(data) < 4096:
                chunk = self.rfile.read1(4096)  # the reader's buffer first: it reads ahead
                if not chunk:
                    break
                data += chunk
        except OSError:  # the timeout, or a reset
            pass
        s = self.server_info
        self.events.log(kind="after_reply", server=s["name"], addr=s["addr"], port=s["port"],
                        data=data.decode("latin-1"))
        self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_request

    def reply(self, status, kind, body):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Served-By", self.server_info["name"])
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
            handler = type("Handler", (HttpHandler,),
                           {"server_info": s, "events": events, "zone": ctx["zone"],
                            "index": ctx["index"], "index_host": ctx["index_host"]})
            handler(conn, peer, None)
        elif s["proto"] == "banner":
            conn.sendall(f"{s['banner']} {s['name']}\r\n".encode())
            conn.recv(1)  # until the client closes or the timeout
        elif s["proto"] in ("dot", "dns-tcp"):
            while True:  # queries in order on one connection, until the client closes
                length = struct.unpack("!H", recv_exact(conn, 2))[0]
                reply, question = ctx["zone"].answer(recv_exact(conn, length))
                events.log(kind="dns", server=s["name"], addr=s["addr"], port=s["port"],
                           transport="tls" if s["proto"] == "dot" else "tcp",
                           qname=question[0], qtype=question[1])
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
        out.append((listen("tcp", dns["addr"], 53),
                    {"proto": "dns-tcp", "name": dns["name"], "addr": dns["addr"], "port": 53}))
        out.append((listen("tcp", dns["addr"], dns["dot_port"]),
                    {"proto": "dot", "name": dns["name"], "addr": dns["addr"],
                     "port": dns["dot_port"],
                     "tls": server_context(cert_dir, dns["name"])}))
    return out


def serve(config, listeners):
    ctx = {"events": Events(config["events"]), "zone": Zone(config.get("zone_hosts", [])),
           "index": None, "index_host": None}
    if "package_index" in config:
        ctx["index"] = pypi_index.Index(config["package_index"]["dir"])
        ctx["index_host"] = config["package_index"]["server"]
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
    parser.add_argument("role", choices=["certs", "internet", "canary", "blob-sha256", "wheel"])
    parser.add_argument("--dir")
    parser.add_argument("--names")
    parser.add_argument("--rogue-names", default="")
    parser.add_argument("--config")
    parser.add_argument("--size", type=int)
    args = parser.parse_args()
    if args.role == "blob-sha256":
        print(hashlib.sha256(blob(args.size)).hexdigest())
        return
    if args.role == "wheel":
        print(pypi_index.build_wheel(args.dir))
        return
    if args.role == "certs":
        make_certs(args.dir, args.names.split(","), [n for n in args.rogue_names.split(",") if n])
        return
    with open(args.config) as f:
        config = json.load(f)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    serve(config, services(config))


if __name__ == "__main__":
    sys.exit(main())
