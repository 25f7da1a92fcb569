"""Captures the seed corpora of tests/fuzz/corpus/ from real clients on this machine.

Run once by hand (python3 tests/fuzz/capture_seeds.py) when a seed should be refreshed; the
corpora are committed. Every listener is on 127.0.0.1 and takes one connection.
  dns_message       glibc's own queries (getent ahosts), its resolv.conf pointed at a local
                    UDP socket in a private mount namespace (unshare -m), the host's untouched
  tls_client_hello  ClientHellos of python's ssl and of openssl s_client, one in several records
  http_head         the request heads of curl and python's urllib
  proxy_request     curl's absolute-form and CONNECT requests to a proxy
  session_frames    the real session driver (rootfs/session_driver.py) answering request 3
"""
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
    no_proxy = {"http_proxy": "", "https_proxy": "", "HTTP_PROXY": "", "HTTPS_PROXY": ""}
    env = {**os.environ, **no_proxy}

    def curl(args):
        return lambda port: subprocess.run(
            ["curl", "-s", "-m", "2", *args(port)], env=env, capture_output=True, timeout=5)

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
    dns_seeds()
    session_seeds()
