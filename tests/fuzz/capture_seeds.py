"""Captures the seed corpora of tests/fuzz/corpus/ from real clients on this machine.

Run once by hand (python3 tests/fuzz/capture_seeds.py) when a seed should be refreshed; the
corpora are committed. Every listener is on 127.0.0.1 and takes one connection.
  dns_message       glibc's own queries (getent ahosts), its resolv.conf pointed at a local
                    UDP socket in a private mount namespace (unshare -m), the host's untouched
  tls_client_hello  ClientHellos of python's ssl and of openssl s_client, one in several records
  http_head         the request heads of curl and python's urllib
  proxy_request     curl's absolute-form and CONNECT requests to a proxy
  http_request_stream  whole keep-alive connections to an HTTP/1.1 server: curl's two GETs,
                    python's POST then GET, python's and curl's chunked uploads (curl's two,
                    asked for Expect: 100-continue); and, written here since no client sends them,
                    pipelined GETs and two smuggling attempts (CL and TE together, a GET body)
  session_frames    the real session driver (rootfs/session_driver.py) answering request 3
"""
import http.client
import http.server
import os
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# curl straight to the local listeners, whatever proxy the machine is set up with.
CLIENT_ENV = {**os.environ,
              "http_proxy": "", "https_proxy": "", "HTTP_PROXY": "", "HTTPS_PROXY": ""}


def save(target, name, data):
    directory = os.path.join(HERE, "corpus", target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as out:
        out.write(data)
    print(f"{target}/{name}: {len(data)} bytes")


def capture_tcp(client, answer=b""):
    """Runs client(port) against a listener; returns the bytes the client sent first."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    got = []

    def serve():
        conn, _ = server.accept()
        conn.settimeout(1.0)
        data = b""
        try:
            while b"\r\n\r\n" not in data or data[:1] == b"\x16":
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            pass
        got.append(data)
        if answer:
            conn.sendall(answer)
        conn.close()

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        client(server.getsockname()[1])
    except (OSError, ssl.SSLError, subprocess.SubprocessError):
        pass  # the listener closed without answering: the bytes are what counts
    thread.join()
    server.close()
    return got[0]


def tls_seeds():
    def python_client(port):
        context = ssl.create_default_context()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            context.wrap_socket(sock, server_hostname="pypi.org")

    save("tls_client_hello", "python-ssl-sni", capture_tcp(python_client))

    def openssl(*args):
        return lambda port: subprocess.run(
            ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", *args],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=5)

    save("tls_client_hello", "openssl-sni", capture_tcp(openssl("-servername", "api.example.com")))
    save("tls_client_hello", "openssl-no-sni", capture_tcp(openssl("-noservername")))
    # Long enough (40 ALPN names) that records of at most 512 bytes cut it in two.
    alpn = ",".join(f"proto-{i:04d}" for i in range(40))
    save("tls_client_hello", "openssl-sni-two-records", capture_tcp(openssl(
        "-servername", "files.example.org", "-max_send_frag", "512", "-alpn", alpn)))
    save("tls_client_hello", "openssl-tls12",
         capture_tcp(openssl("-servername", "a.b.example", "-tls1_2")))


def http_seeds():

    def curl(args):
        return lambda port: subprocess.run(
            ["curl", "-s", "-m", "2", *args(port)], env=CLIENT_ENV, capture_output=True, timeout=5)

    save("http_head", "curl-get", capture_tcp(curl(lambda p: [
        "--connect-to", f"example.com:80:127.0.0.1:{p}", "http://example.com/index.html?q=1"])))
    save("http_head", "curl-post", capture_tcp(curl(lambda p: [
        "--connect-to", f"api.example.com:8080:127.0.0.1:{p}", "-d", "a=1",
        "-H", "X-Trace: 7", "http://api.example.com:8080/v1/items"])))

    def urllib_client(port):
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        request = urllib.request.Request(f"http://127.0.0.1:{port}/simple/",
                                         headers={"Host": "pypi.org"})
        opener.open(request, timeout=2)

    save("http_head", "python-urllib", capture_tcp(urllib_client))
    save("proxy_request", "curl-absolute-form", capture_tcp(curl(lambda p: [
        "-x", f"http://127.0.0.1:{p}", "http://example.com/path?x=1"])))
    save("proxy_request", "curl-connect", capture_tcp(curl(lambda p: [
        "-x", f"http://127.0.0.1:{p}", "https://example.com/"])))
    save("proxy_request", "curl-connect-v6", capture_tcp(curl(lambda p: [
        "-p", "-x", f"http://127.0.0.1:{p}", "http://[2001:db8::1]:8443/"])))


class _Recorded:
    """A request handler's rfile that keeps every byte the handler reads."""

    def __init__(self, rfile, into):
        self._rfile, self._into = rfile, into

    def readline(self, *args):
        line = self._rfile.readline(*args)
        self._into.append(line)
        return line

    def read(self, *args):
        data = self._rfile.read(*args)
        self._into.append(data)
        return data

    def __getattr__(self, name):
        return getattr(self._rfile, name)


def capture_keep_alive(client):
    """Runs client(port) against a keep-alive HTTP/1.1 server that reads every request and its
    body (Content-Length or chunked) and answers 200; returns the bytes the client sent."""
    received = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            self.rfile = _Recorded(self.rfile, received)

        def answer(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                while (size := int(self.rfile.readline().strip(), 16)) > 0:
                    self.rfile.read(size)
                    self.rfile.readline()
                while self.rfile.readline() not in (b"\r\n", b""):
                    pass
            else:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        do_GET = do_POST = do_PUT = answer

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        client(server.server_address[1])
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
    return b"".join(received)


def request_stream_seeds():

    def curl(*args):
        return lambda port: subprocess.run(
            ["curl", "-s", "-m", "5", "--connect-to", f"example.com:80:127.0.0.1:{port}", *args],
            env=CLIENT_ENV, capture_output=True, timeout=10, check=True)

    save("http_request_stream", "curl-keep-alive-gets", capture_keep_alive(
        curl("http://example.com/a", "http://example.com/b?x=1")))
    save("http_request_stream", "curl-chunked-expect", capture_keep_alive(
        curl("-H", "Transfer-Encoding: chunked", "-H", "Expect: 100-continue",
             "--data-binary", "chunk of a body",
             "http://example.com/upload", "http://example.com/after")))

    def python_client(*requests):
        def run(port):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            for method, path, body in requests:
                connection.request(method, path, body=body, headers={"Host": "api.example.com"})
                connection.getresponse().read()
            connection.close()
        return run

    save("http_request_stream", "python-post-then-get", capture_keep_alive(python_client(
        ("POST", "/v1/items", b'{"name": "a"}'), ("GET", "/v1/items", None))))
    save("http_request_stream", "python-chunked-then-get", capture_keep_alive(python_client(
        ("POST", "/upload", iter([b"first ", b"second"])), ("GET", "/done", None))))

    get = b"GET /%d HTTP/1.1\r\nHost: example.com\r\n\r\n"
    save("http_request_stream", "pipelined-gets", b"".join(get % i for i in range(3)))
    # A front end reading Content-Length passes the body whole; a server reading
    # Transfer-Encoding ends it at "0" and reads the rest as a request for another host.
    hidden = b"GET /admin HTTP/1.1\r\nHost: internal.example\r\n\r\n"
    save("http_request_stream", "smuggle-cl-te",
         b"POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: %d\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n%s" % (5 + len(hidden), hidden))
    # A server ignoring a GET's body reads it as the next request (CL.0).
    save("http_request_stream", "smuggle-get-body",
         b"GET / HTTP/1.1\r\nHost: example.com\r\nContent-Length: %d\r\n\r\n%s"
         % (len(hidden), hidden))


def dns_seeds():
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 53))
    udp.settimeout(3)
    with tempfile.NamedTemporaryFile("w", suffix=".conf") as conf:
        conf.write("nameserver 127.0.0.1\noptions edns0 attempts:1 timeout:1\n")
        conf.flush()
        script = f"mount --bind {conf.name} /etc/resolv.conf && getent ahosts pypi.org"
        child = subprocess.Popen(["unshare", "-m", "sh", "-c", script],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seen = 0
        try:
            while seen < 2:
                packet, _ = udp.recvfrom(2048)
                save("dns_message", f"glibc-query-{seen}", packet)
                seen += 1
        except socket.timeout:
            pass
        child.wait()


def session_seeds():
    cells = {
        "print-and-value": b"print('a')\n40 + 2",
        "error": b"1 / 0",
        "figure": b"import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                  b"plt.plot([1, 2])\nplt.savefig('x.png')\n",
    }
    for name, source in cells.items():
        host, peer = socket.socketpair()
        with tempfile.TemporaryDirectory() as workdir:
            driver = subprocess.Popen([sys.executable, os.path.join(ROOT, "rootfs/session_driver.py")],
                                      stdin=peer, cwd=workdir, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            peer.close()
            request = (b'{"op": "exec", "id": 3, "language": "python", "timeout_seconds": 10,'
                       b' "output_bytes": 4096, "figures_dir": "output/figures"}')
            for frame in (request, source, b'{"op": "close"}'):
                host.sendall(struct.pack(">I", len(frame)) + frame)
            data = b""
            while chunk := host.recv(65536):
                data += chunk
            driver.wait()
        save("session_frames", name, data)


if __name__ == "__main__":
    tls_seeds()
    http_seeds()
    request_stream_seeds()
    dns_seeds()
    session_seeds()
