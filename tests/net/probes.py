#!/usr/bin/python3
"""Network probes for the allowlist tests: run inside the sandbox (the image's python3) and,
as the control, unsandboxed in the test's "host" netns T (the host's python3).

  python3 probes.py <probe> [args...]

Each probe prints one JSON object on its last line of stdout and exits 0, also when what it
tried failed: failures are data ({"error": "ConnectionResetError", "errno_name": "ECONNRESET",
"stage": "handshake", ...}). Every network wait is bounded. Standard library only. The test CA
is ca.pem next to this file unless --cafile says otherwise.
"""

import argparse
import base64
import errno
import hashlib
import http.client
import json
import os
import random
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

TIMEOUT_S = 10
HERE = os.path.dirname(os.path.abspath(__file__))
EAI_NAMES = {getattr(socket, n): n for n in dir(socket) if n.startswith("EAI_")}
QTYPES = {"A": 1, "TXT": 16, "AAAA": 28, "SVCB": 64, "HTTPS": 65}
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy")


def describe(exc, **extra):
    """An exception as data: its type, errno and errno name (EAI_* for resolver errors)."""
    if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, BaseException):
        extra["via"] = "URLError"
        exc = exc.reason
    out = {"error": type(exc).__name__, "msg": str(exc)[:300], **extra}
    if isinstance(exc, socket.gaierror):
        out["errno"], out["errno_name"] = exc.errno, EAI_NAMES.get(exc.errno)
    elif isinstance(exc, ssl.SSLError):
        out["ssl_reason"] = exc.reason
    elif isinstance(exc, OSError) and exc.errno is not None:
        out["errno"], out["errno_name"] = exc.errno, errno.errorcode.get(exc.errno)
    return out


def ms_since(start):
    return round((time.monotonic() - start) * 1000, 2)


def tls_context(cafile, check_hostname):
    context = ssl.create_default_context(cafile=cafile or os.path.join(HERE, "ca.pem"))
    context.check_hostname = check_hostname
    return context


def peer_cn(tls_sock):
    for rdn in tls_sock.getpeercert().get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return None


def read_http_response(sock, method="GET"):
    response = http.client.HTTPResponse(sock, method=method)
    response.begin()
    body = response.read()
    return {"status": response.status, "served_by": response.getheader("X-Served-By"),
            "body": body.decode("utf-8", "replace")[:300]}


def authorization(args):
    """The Authorization value to send: --auth TEXT, or "Bearer " and the value of the variable
    --auth-env names (inside a sandbox with secret injection: the placeholder). None if neither."""
    if getattr(args, "auth", None):
        return args.auth
    if getattr(args, "auth_env", None):
        return "Bearer " + os.environ.get(args.auth_env, "")
    return None


def send_get(sock, host, path, auth=None):
    extra = f"Authorization: {auth}\r\n" if auth else ""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: sbx-probe\r\n{extra}\r\n"
                 .encode())


# --- probes -------------------------------------------------------------------------------

def probe_env(args):
    out = {"proxy_env": {k: v for k, v in os.environ.items() if k.lower() in PROXY_VARS}}
    if args.all:
        # Straight from the kernel's copy, as a payload hunting for keys would read it.
        with open("/proc/self/environ", "rb") as f:
            out["environ"] = f.read().decode("utf-8", "replace").split("\0")
    return out


def probe_resolve(args):
    family = {"4": socket.AF_INET, "6": socket.AF_INET6, "any": socket.AF_UNSPEC}[args.family]
    start = time.monotonic()
    try:
        infos = socket.getaddrinfo(args.name, 443, family, socket.SOCK_STREAM)
    except OSError as e:
        return describe(e, ms=ms_since(start))
    return {"addrs": sorted({info[4][0] for info in infos}), "ms": ms_since(start)}


def one_http(args):
    stage = "connect"
    try:
        with socket.create_connection((args.addr, args.port), timeout=TIMEOUT_S) as sock:
            stage = "request"
            send_get(sock, args.host or args.addr, args.path, authorization(args))
            return read_http_response(sock)
    except (OSError, http.client.HTTPException) as e:
        return describe(e, stage=stage)


def probe_http(args):
    if args.count == 1:
        return one_http(args)
    return {"results": [one_http(args) for _ in range(args.count)]}


def probe_urlopen(args):
    context = tls_context(args.cafile, True) if args.url.startswith("https:") else None
    headers = dict(h.split(": ", 1) for h in args.header)
    if authorization(args):
        headers["Authorization"] = authorization(args)
    data = args.data.encode() if args.data is not None else None  # a body makes it a POST
    request = urllib.request.Request(args.url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S, context=context) as response:
            body = response.read()
            out = {"status": response.status, "served_by": response.headers.get("X-Served-By"),
                   "auth_sent": authorization(args)}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": e.read().decode("utf-8", "replace")[:300]}
    except (OSError, http.client.HTTPException) as e:
        return describe(e)
    if args.digest:
        out.update(length=len(body), sha256=hashlib.sha256(body).hexdigest())
    else:
        out["body"] = body.decode("utf-8", "replace")[:300]
    return out


def open_tls(args):
    """(tls socket, None) or (None, error dict). Verifies the chain, not the name, so a test
    can see whose certificate answered."""
    stage = "connect"
    sock = None
    try:
        sock = socket.create_connection((args.addr, args.port), timeout=TIMEOUT_S)
        stage = "handshake"
        tls = tls_context(args.cafile, False).wrap_socket(sock, server_hostname=args.sni or None)
        return tls, None
    except OSError as e:
        if sock is not None:
            sock.close()
        return None, describe(e, stage=stage)


def probe_tls(args):
    tls, error = open_tls(args)
    if error:
        return error
    with tls:
        out = {"peer_cn": peer_cn(tls)}
        try:
            send_get(tls, args.host or args.sni or args.addr, args.path, authorization(args))
            out.update(read_http_response(tls))
        except (OSError, http.client.HTTPException) as e:
            out.update(describe(e, stage="request"))
        return out


def probe_tls_split(args):
    """TLS with the ClientHello cut into two handshake records at --at bytes of its body (as
    a client with a small record size, or an evasion tool, sends it), each in its own TCP
    segment, then a GET. Python's ssl makes the ClientHello; only its framing is changed."""
    context = tls_context(args.cafile, False)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=args.sni or None)
    stage = "connect"
    try:
        sock = socket.create_connection((args.addr, args.port), timeout=TIMEOUT_S)
    except OSError as e:
        return describe(e, stage=stage)
    with sock:
        try:
            stage = "client_hello"
            try:
                tls.do_handshake()
            except ssl.SSLWantReadError:
                pass
            hello = outgoing.read()
            if len(hello) < 6 or hello[0] != 22 or int.from_bytes(hello[3:5], "big") != len(hello) - 5:
                return {"error": "not one handshake record", "length": len(hello)}
            body = hello[5:]
            cut = args.at if args.at is not None else len(body) // 2
            record = lambda part: hello[:3] + len(part).to_bytes(2, "big") + part
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(record(body[:cut]))
            time.sleep(0.05)  # two segments, two reads on the other side
            sock.sendall(record(body[cut:]))
            stage = "handshake"
            while True:
                try:
                    tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    if outgoing.pending:
                        sock.sendall(outgoing.read())
                    data = sock.recv(65536)
                    if not data:
                        raise ConnectionResetError(errno.ECONNRESET, "closed in the handshake")
                    incoming.write(data)
            stage = "request"
            tls.write(f"GET {args.path} HTTP/1.1\r\nHost: {args.host or args.sni}\r\n"
                      "Connection: close\r\n\r\n".encode())
            sock.sendall(outgoing.read())
            response = b""
            while True:
                try:
                    response += tls.read(65536)
                except ssl.SSLWantReadError:
                    data = sock.recv(65536)
                    if not data:
                        break
                    incoming.write(data)
                except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                    break
        except OSError as e:
            return describe(e, stage=stage)
    head, _, payload = response.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = status_line.split(" ")
    return {"split_at": cut, "hello_bytes": len(body),
            "status": int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None,
            "body": payload.decode("utf-8", "replace")[:300]}


def probe_tls_many(args):
    """Opens `count` connections one after another and holds them all open."""
    held, results = [], []
    try:
        for _ in range(args.count):
            tls, error = open_tls(args)
            if error:
                results.append(error)
                continue
            held.append(tls)
            try:
                send_get(tls, args.host or args.sni, args.path)
                results.append(read_http_response(tls))
            except (OSError, http.client.HTTPException) as e:
                results.append(describe(e, stage="request"))
    finally:
        for tls in held:
            tls.close()
    return {"results": results}


def read_head(sock, limit=16384):
    """Bytes up to the end of an HTTP head (bounded), and what followed in the same reads."""
    data = b""
    while b"\r\n\r\n" not in data and len(data) < limit:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head.decode("latin-1"), rest


def probe_connect(args):
    """CONNECT <target> to the proxy $https_proxy names, as a tool that honours it would; with
    --tls, then TLS (SNI --sni or the target's host, the chain verified, not the name) and a GET
    through the tunnel. Reports the proxy's status and body, then what the tunnel gave."""
    proxy = os.environ.get("https_proxy") or os.environ.get("HTTPS_PROXY")
    if not proxy:
        return {"error": "no_proxy_variable"}
    host_port = proxy.split("://", 1)[-1].rstrip("/")
    phost, _, pport = host_port.rpartition(":")
    stage = "resolve"
    out = {}
    try:
        if args.resolve:
            # The name's address as this sandbox's DNS gives it (a fake address under an
            # allowlist), CONNECTed to as a literal.
            host, _, port = args.target.rpartition(":")
            address = socket.getaddrinfo(host, int(port), socket.AF_INET)[0][4][0]
            args.target = f"{address}:{port}"
            out["target"] = args.target
        stage = "connect"
        sock = socket.create_connection((phost, int(pport)), timeout=TIMEOUT_S)
    except OSError as e:
        return dict(out, **describe(e, stage=stage))
    with sock:
        try:
            stage = "request"
            sock.sendall(f"CONNECT {args.target} HTTP/1.1\r\nHost: {args.target}\r\n\r\n"
                         .encode())
            head, rest = read_head(sock)
            status_line = head.split("\r\n", 1)[0]
            parts = status_line.split(" ", 2)
            out.update(status=int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None,
                       status_line=status_line[:200])
            if out["status"] != 200:
                while len(rest) < 4096:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    rest += chunk
                out["body"] = rest.decode("utf-8", "replace")[:300]
                return out
            if not args.tls:
                return out
            stage = "handshake"
            sni = args.sni or args.target.rsplit(":", 1)[0].strip("[]")
            tls = tls_context(args.cafile, False).wrap_socket(sock, server_hostname=sni)
            out["peer_cn"] = peer_cn(tls)
            stage = "tunnel_request"
            send_get(tls, args.host or sni, args.path)
            tunnel = read_http_response(tls)
            out.update({"tunnel_" + k: v for k, v in tunnel.items()})
            return out
        except (OSError, http.client.HTTPException) as e:
            return dict(out, **describe(e, stage=stage))


def split_responses(data):
    """HTTP/1.x responses with Content-Length, back to back: their statuses and bodies."""
    statuses, bodies = [], []
    while b"\r\n\r\n" in data:
        head, _, data = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        statuses.append(int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None)
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length" and value.strip().isdigit():
                length = int(value.strip())
        bodies.append(data[:length].decode("utf-8", "replace")[:300])
        data = data[length:]
    return statuses, bodies


def probe_pipeline(args):
    """Absolute-form requests for args.urls, back to back on one keep-alive connection to the
    proxy ($http_proxy, or --proxy host:port), the first a POST of --data if given; then reads
    until the connection ends. Reports the responses' statuses and bodies, and whether the
    other side closed (false: still open after TIMEOUT_S)."""
    proxy = args.proxy or (os.environ.get("http_proxy") or "").split("://", 1)[-1].rstrip("/")
    if not proxy:
        return {"error": "no_proxy_variable"}
    phost, _, pport = proxy.rpartition(":")
    requests = b""
    for i, url in enumerate(args.urls):
        host = urllib.parse.urlsplit(url).netloc
        body = args.data.encode() if i == 0 and args.data is not None else None
        method = "POST" if body is not None else "GET"
        extra = f"Content-Length: {len(body)}\r\n" if body is not None else ""
        requests += (f"{method} {url} HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\n"
                     f"{extra}\r\n").encode() + (body or b"")
    return exchange((phost, int(pport)), [requests])


def exchange(address, phases):
    """Sends each phase on one connection to address, the next once the responses so far
    number one per phase sent; after the last, reads until the connection ends. The
    responses' statuses and bodies, and whether the other side closed (false: still open
    after TIMEOUT_S)."""
    stage = "connect"
    data, closed = b"", False
    try:
        with socket.create_connection(address, timeout=TIMEOUT_S) as sock:
            for i, phase in enumerate(phases):
                stage = f"request{i}"
                sock.sendall(phase)
                last = i == len(phases) - 1
                while not closed and len(data) < 65536:
                    if not last and len(split_responses(data)[0]) > i:
                        break
                    chunk = sock.recv(4096)
                    closed = not chunk
                    data += chunk
    except OSError as e:
        statuses, bodies = split_responses(data)
        return dict(describe(e, stage=stage), statuses=statuses, bodies=bodies, closed=closed)
    statuses, bodies = split_responses(data)
    return {"statuses": statuses, "bodies": bodies, "closed": closed}


def smuggle_phases(front, other, scenario):
    """The bytes of probe_smuggle's scenario, in phases: each but the last is answered before
    the next is sent."""
    def get(host, path, close=False):
        return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\n"
                + ("Connection: close\r\n" if close else "") + "\r\n").encode()
    hidden = get(other, "/hidden", close=True)
    if scenario == "same":
        return [get(front, "/first"), get(front, "/second", close=True)]
    if scenario == "keepalive":
        return [get(front, "/first"), get(other, "/second", close=True)]
    if scenario == "pipeline":
        return [get(front, "/first") + get(other, "/second", close=True)]
    if scenario == "te_cl":
        # A parser that follows Transfer-Encoding reads one chunk holding `hidden`; the
        # server follows Content-Length, reads the size line only and then `hidden` as a request.
        size_line = f"{len(hidden):x}\r\n".encode()
        return [(f"POST /first HTTP/1.1\r\nHost: {front}\r\nContent-Length: {len(size_line)}\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n").encode() + size_line + hidden
                + b"\r\n0\r\n\r\n"]
    # cl_cl: the server takes the first Content-Length (0), a parser taking the last reads
    # `hidden` as the body.
    return [(f"POST /first HTTP/1.1\r\nHost: {front}\r\nContent-Length: 0\r\n"
             f"Content-Length: {len(hidden)}\r\n\r\n").encode() + hidden]


def probe_smuggle(args):
    """Requests on one plain-HTTP connection to args.addr, the first for --host (default addr),
    a later or hidden one for --other: keep-alive (after the first answer), pipelined, behind
    Transfer-Encoding with a Content-Length, behind a second Content-Length, or "same" (two
    keep-alive requests to the first host). Reports the statuses and bodies that came back and
    whether the other side closed."""
    phases = smuggle_phases(args.host or args.addr, args.other, args.scenario)
    return exchange((args.addr, args.port), phases)


def probe_banner(args):
    stage = "connect"
    try:
        with socket.create_connection((args.addr, args.port), timeout=TIMEOUT_S) as sock:
            stage = "recv"
            data = sock.recv(200)
            return {"banner": data.decode("utf-8", "replace").strip()} if data else {"eof": True}
    except OSError as e:
        return describe(e, stage=stage)


def probe_own_server(args):
    """A server of the code's own on 127.0.0.1:<port> (a dev server an agent starts and curls)."""
    results = {}
    for port in args.ports:
        try:
            with socket.socket() as listener:
                listener.bind(("127.0.0.1", port))
                listener.listen(1)
                with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as client:
                    conn, _ = listener.accept()
                    with conn:
                        conn.sendall(b"own")
                        results[str(port)] = client.recv(8).decode()
        except OSError as e:
            results[str(port)] = describe(e).get("errno_name") or str(e)
    return {"ports": results}


def probe_udp(args):
    family = socket.AF_INET6 if ":" in args.addr else socket.AF_INET
    start = time.monotonic()
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        sock.settimeout(3)
        try:
            sock.connect((args.addr, args.port))
            sock.send(b"\x00quic-or-ntp-probe")
            reply = sock.recv(200)
        except OSError as e:
            return describe(e, ms=ms_since(start))
    return {"reply": reply.decode("utf-8", "replace"), "ms": ms_since(start)}


def dns_query(qname, qtype):
    query_id = random.getrandbits(16)
    header = struct.pack("!HHHHHH", query_id, 0x0100, 1, 0, 0, 0)
    labels = b"".join(bytes([len(p)]) + p.encode() for p in qname.split("."))
    return query_id, header + labels + b"\x00" + struct.pack("!HH", QTYPES[qtype], 1)


def dns_summary(qname, qtype, reply):
    flags, _, ancount = struct.unpack("!HHH", reply[2:8])
    return {"qname": qname, "qtype": qtype, "rcode": flags & 0xF, "ancount": ancount}


def first_nameserver():
    with open("/etc/resolv.conf") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "nameserver":
                return parts[1]
    return "127.0.0.1"


def dns_over_tcp(server, queries):
    """`queries` ("name/TYPE") in order on one TCP connection to `server`:53 (RFC 7766 framing)."""
    answers = []
    start = time.monotonic()
    try:
        with socket.create_connection((server, 53), timeout=3) as sock, sock.makefile("rb") as replies:
            for spec in queries:
                qname, qtype = spec.split("/")
                query_id, query = dns_query(qname, qtype)
                sock.sendall(struct.pack("!H", len(query)) + query)
                length = struct.unpack("!H", replies.read(2))[0]  # struct.error when cut short
                reply = replies.read(length)
                if len(reply) != length or struct.unpack("!H", reply[:2])[0] != query_id:
                    raise ValueError("a short reply, or not the query's")
                answers.append(dict(dns_summary(qname, qtype, reply), ms=ms_since(start)))
                start = time.monotonic()
    except (OSError, ValueError, struct.error) as e:
        answers.append(describe(e, ms=ms_since(start)))
    return {"server": server, "transport": "tcp", "answers": answers}


def probe_dns(args):
    """Raw queries ("name/TYPE") to the first nameserver of /etc/resolv.conf (or --server), one
    at a time; with --tcp all on one TCP connection."""
    server = args.server or first_nameserver()
    if args.tcp:
        return dns_over_tcp(server, args.queries)
    answers = []
    for spec in args.queries:
        qname, qtype = spec.split("/")
        query_id, query = dns_query(qname, qtype)
        start = time.monotonic()
        with socket.socket(socket.AF_INET6 if ":" in server else socket.AF_INET,
                           socket.SOCK_DGRAM) as sock:
            sock.settimeout(3)
            try:
                sock.sendto(query, (server, 53))
                while True:
                    reply = sock.recv(4096)
                    if len(reply) >= 12 and struct.unpack("!H", reply[:2])[0] == query_id:
                        break
                answers.append(dict(dns_summary(qname, qtype, reply), ms=ms_since(start)))
            except OSError as e:
                answers.append(describe(e, qname=qname, qtype=qtype, ms=ms_since(start)))
    return {"server": server, "answers": answers}


def probe_dot(args):
    tls, error = open_tls(args)
    if error:
        return error
    with tls:
        try:
            _, query = dns_query(args.qname, "A")
            tls.sendall(struct.pack("!H", len(query)) + query)
            length = struct.unpack("!H", tls.recv(2))[0]
            return dns_summary(args.qname, "A", tls.recv(length))
        except (OSError, struct.error) as e:
            return describe(e, stage="query")


def probe_doh(args):
    _, query = dns_query(args.qname, "A")
    url = args.url + "?dns=" + base64.urlsafe_b64encode(query).decode().rstrip("=")
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S,
                                    context=tls_context(args.cafile, True)) as response:
            return dns_summary(args.qname, "A", response.read())
    except (OSError, http.client.HTTPException) as e:
        return describe(e)


def netlink_request(protocol, msg_type, payload):
    """Sends one request with NLM_F_ACK; returns "ok" or the errno name of the answer."""
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, protocol)
    except OSError as e:
        return "socket:" + errno.errorcode.get(e.errno, str(e.errno))
    with sock:
        sock.settimeout(3)
        flags = 0x1 | 0x4  # NLM_F_REQUEST | NLM_F_ACK
        try:
            sock.send(struct.pack("=IHHII", 16 + len(payload), msg_type, flags, 1, 0) + payload)
            reply = sock.recv(4096)
        except OSError as e:
            return "send:" + errno.errorcode.get(e.errno, str(e.errno))
    if struct.unpack("=H", reply[4:6])[0] != 2:  # NLMSG_ERROR carries the ack
        return "unexpected-reply"
    code = -struct.unpack("=i", reply[16:20])[0]
    return "ok" if code == 0 else errno.errorcode.get(code, str(code))


def probe_privileged(args):
    """What a workload with no capabilities tries, to undo the capture. Each step
    is harmless where it succeeds: the route and the nftables table it names do not exist."""
    out = {}
    # RTM_DELROUTE for "local 0.0.0.0/0 dev lo table local", the capture route itself.
    rtmsg = struct.pack("=BBBBBBBBI", socket.AF_INET, 0, 0, 0, 255, 0, 254, 2, 0)
    out["route_del"] = netlink_request(socket.NETLINK_ROUTE, 25, rtmsg)
    # NFT_MSG_GETTABLE inet "sbx_probe" (nfnetlink asks CAP_NET_ADMIN for any message).
    name = b"sbx_probe\x00"
    attr = struct.pack("=HH", 4 + len(name), 1) + name + b"\x00" * (-len(name) % 4)
    out["nft"] = netlink_request(12, (10 << 8) | 1, struct.pack("=BBH", 1, 0, 0) + attr)
    for step, family, kind, proto in (("raw_socket", socket.AF_INET, socket.SOCK_RAW, 1),
                                      ("packet_socket", socket.AF_PACKET, socket.SOCK_RAW, 0)):
        try:
            socket.socket(family, kind, proto).close()
            out[step] = "ok"
        except OSError as e:
            out[step] = errno.errorcode.get(e.errno, str(e.errno))
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("0.0.0.0", 443))
            out["bind_443"] = "ok"
    except OSError as e:
        out["bind_443"] = errno.errorcode.get(e.errno, str(e.errno))
    if args.then_url:
        args.url, args.digest, args.header, args.data = args.then_url, False, [], None
        out["then"] = probe_urlopen(args)
    return out


def run_tail(argv, env, timeout):
    """(exit code, stdout, stderr) of a bounded subprocess."""
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout} s"
    return done.returncode, done.stdout, done.stderr


def probe_pip(args):
    """pip install --target HERE/site from an index, then import what it installed. The
    caller's PIP_* variables and pip's config files are dropped (a host's /etc/pip.conf or
    PIP_FIND_LINKS would change the control); cache and version check are off and retries and
    timeouts bounded, so a refused index fails within seconds. -vv makes pip log why it could
    not fetch a page ("fetch_errors"); at lower verbosity it only says no version was found."""
    target = os.path.join(HERE, "site")
    shutil.rmtree(target, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               PIP_ROOT_USER_ACTION="ignore")
    cafile = args.cafile or os.path.join(HERE, "ca.pem")
    start = time.monotonic()
    code, out, err = run_tail(
        [sys.executable, "-m", "pip", "install", "-vv", "--no-deps", "--no-cache-dir",
         "--retries", "0", "--timeout", "5", "--index-url", args.index_url, "--cert", cafile,
         "--target", target, args.package], env, 60)
    result = {"exit_code": code, "ms": ms_since(start), "stderr": err[-2000:],
              "fetch_errors": [line[:500] for line in out.splitlines()
                               if line.startswith("Could not fetch URL")]}
    if code == 0:
        module = args.package.replace("-", "_")
        code, out, err = run_tail(
            [sys.executable, "-c", f"import {module}; print({module}.VALUE)"],
            dict(env, PYTHONPATH=target), 30)
        result["import"] = {"exit_code": code, "stdout": out.strip(), "stderr": err[-2000:]}
    return result


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="probe", required=True)
    sub.add_parser("env").add_argument("--all", action="store_true")
    p = sub.add_parser("resolve")
    p.add_argument("name")
    p.add_argument("--family", choices=["4", "6", "any"], default="any")
    p = sub.add_parser("http")
    p.add_argument("addr")
    p.add_argument("--port", type=int, default=80)
    p.add_argument("--host")
    p.add_argument("--path", default="/")
    p.add_argument("--count", type=int, default=1)
    p = sub.add_parser("urlopen")
    p.add_argument("url")
    p.add_argument("--digest", action="store_true")
    p.add_argument("--header", action="append", default=[], help='"Name: value", repeatable')
    p.add_argument("--data", help="POST this text")
    for probe in ("tls", "tls_many", "dot"):
        p = sub.add_parser(probe)
        p.add_argument("addr")
        p.add_argument("--port", type=int, default=853 if probe == "dot" else 443)
        p.add_argument("--sni", default="")
        p.add_argument("--host")
        p.add_argument("--path", default="/")
        if probe == "tls_many":
            p.add_argument("--count", type=int, required=True)
        if probe == "dot":
            p.add_argument("--qname", required=True)
    p = sub.add_parser("tls_split")
    p.add_argument("addr")
    p.add_argument("--port", type=int, default=443)
    p.add_argument("--sni", default="")
    p.add_argument("--host")
    p.add_argument("--path", default="/")
    p.add_argument("--at", type=int, help="bytes of the ClientHello in the first record")
    for probe in ("banner", "udp"):
        p = sub.add_parser(probe)
        p.add_argument("addr")
        p.add_argument("port", type=int)
    sub.add_parser("own_server").add_argument("ports", type=int, nargs="+")
    p = sub.add_parser("connect")
    p.add_argument("target", help="host:port as the CONNECT line names it")
    p.add_argument("--resolve", action="store_true", help="CONNECT to the host's IPv4 address")
    p.add_argument("--tls", action="store_true")
    p.add_argument("--sni", default="")
    p.add_argument("--host")
    p.add_argument("--path", default="/")
    p = sub.add_parser("pipeline")
    p.add_argument("urls", nargs="+")
    p.add_argument("--proxy", help="host:port instead of $http_proxy's")
    p.add_argument("--data", help="the first request is a POST of this text")
    p = sub.add_parser("smuggle")
    p.add_argument("addr")
    p.add_argument("scenario", choices=["same", "keepalive", "pipeline", "te_cl", "cl_cl"])
    p.add_argument("--port", type=int, default=80)
    p.add_argument("--host", help="the first request's Host (default: addr)")
    p.add_argument("--other", default="evil.test", help="the later or hidden request's Host")
    p = sub.add_parser("dns")
    p.add_argument("queries", nargs="+")
    p.add_argument("--tcp", action="store_true")
    p.add_argument("--server", help="instead of /etc/resolv.conf's first nameserver")
    p = sub.add_parser("doh")
    p.add_argument("url")
    p.add_argument("--qname", required=True)
    p = sub.add_parser("pip")
    p.add_argument("package")
    p.add_argument("--index-url", required=True)
    p = sub.add_parser("privileged")
    p.add_argument("--then-url")
    for p in sub.choices.values():
        p.add_argument("--cafile")
    for probe in ("http", "urlopen", "tls"):
        sub.choices[probe].add_argument("--auth", help="send this Authorization value")
        sub.choices[probe].add_argument("--auth-env", help='send "Bearer $VAR" as Authorization')
    args = parser.parse_args()
    result = globals()["probe_" + args.probe](args)
    print(json.dumps(dict(result, probe=args.probe), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
