"""The server's transport: who may connect, tokens, bounds on what a request may be."""
import os
import socket
import stat
import subprocess
import sys
import time

import pytest

from conftest import SBX, TOKEN, Server


@pytest.fixture(scope="module")
def tcp_server():
    running = Server("--pool", "0", "--request-timeout", "1", tcp=True)
    yield running
    running.stop()


def raw_exchange(server, data, read_timeout=10):
    """Sends raw bytes on a Unix connection; returns everything read until the server closes."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(read_timeout)
    sock.connect(server.socket_path)
    sock.sendall(data)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    sock.close()
    return received


def test_socket_is_private(tcp_server):
    mode = os.stat(tcp_server.socket_path).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(tcp_server.socket_path)).st_mode) == 0o700


def test_tcp_needs_a_token_and_accepts_both_headers(tcp_server):
    import http.client
    def get(headers):
        connection = http.client.HTTPConnection("127.0.0.1", tcp_server.tcp_port, timeout=30)
        connection.request("GET", "/v1/health", headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status
    assert get({}) == 401
    assert get({"Authorization": "Bearer wrong-token-wrong-token"}) == 401
    assert get({"Authorization": "Bearer " + TOKEN[:-1]}) == 401
    assert get({"Authorization": "Bearer " + TOKEN}) == 200
    assert get({"X-Sbx-Token": TOKEN}) == 200
    # With a token file the Unix socket needs it too.
    status, error, _ = tcp_server.request("GET", "/v1/health", headers={"X-Sbx-Token": "nope"})
    assert (status, error["error"]["code"]) == (401, "unauthorized")


def test_tcp_without_a_token_file_is_refused(tmp_path):
    result = subprocess.run([SBX, "serve", "--listen", "tcp:127.0.0.1:0"], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 125 and "--token-file" in result.stderr
    token = tmp_path / "token"
    token.write_text(TOKEN)
    token.chmod(0o644)
    result = subprocess.run([SBX, "serve", "--listen", "tcp:127.0.0.1:0", "--token-file",
                             str(token)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 125 and "chmod 600" in result.stderr


def test_other_users_are_refused_by_peer_credentials(tcp_server):
    """The socket's mode keeps others out; opened up by hand, SO_PEERCRED still does."""
    directory = os.path.dirname(tcp_server.socket_path)
    os.chmod(tcp_server.dir, 0o755)
    os.chmod(directory, 0o755)
    os.chmod(tcp_server.socket_path, 0o777)
    try:
        client = (
            "import socket,sys\n"
            "s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
            "s.sendall(b'GET /v1/health HTTP/1.1\\r\\nHost: x\\r\\nX-Sbx-Token: %s\\r\\n\\r\\n')\n"
            "print(s.recv(100).split(b'\\r\\n')[0].decode())" % TOKEN)
        as_nobody = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                    sys.executable, "-c", client, tcp_server.socket_path],
                                   capture_output=True, text=True, timeout=30)
        assert as_nobody.stdout.strip() == "HTTP/1.1 403 Forbidden", as_nobody.stderr
        as_root = subprocess.run([sys.executable, "-c", client, tcp_server.socket_path],
                                 capture_output=True, text=True, timeout=30)
        assert as_root.stdout.strip() == "HTTP/1.1 200 OK"
    finally:
        os.chmod(tcp_server.socket_path, 0o600)
        os.chmod(directory, 0o700)


def test_malformed_and_oversized_requests(tcp_server):
    auth = ("X-Sbx-Token: %s\r\n" % TOKEN).encode()
    answer = raw_exchange(tcp_server, b"NONSENSE\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400")
    answer = raw_exchange(tcp_server, b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " +
                          b"a" * 20000 + b"\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413")
    answer = raw_exchange(tcp_server, b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\n" + auth +
                          b"Content-Length: 70000000\r\n\r\n{")
    assert answer.startswith(b"HTTP/1.1 413")
    answer = raw_exchange(tcp_server, b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\n" + auth +
                          b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400")


def test_slow_clients_are_cut_off(tcp_server):
    """--request-timeout 1: a head that stops arriving does not hold a thread."""
    started = time.monotonic()
    answer = raw_exchange(tcp_server, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n", read_timeout=20)
    assert time.monotonic() - started < 10
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400")
    # And the server still answers others.
    status, _, _ = tcp_server.request("GET", "/v1/health")
    assert status == 200


def test_keep_alive_serves_several_requests_on_one_connection(tcp_server):
    connection = tcp_server.connection()
    for _ in range(3):
        connection.request("GET", "/v1/health", headers={"X-Sbx-Token": TOKEN})
        response = connection.getresponse()
        assert response.status == 200
        response.read()
    connection.close()


def test_a_live_socket_is_not_taken_over(tcp_server):
    result = subprocess.run([SBX, "serve", "--listen", "unix:" + tcp_server.socket_path],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 125 and "another server" in result.stderr
    # The refused one leaves the live server's socket where it was.
    status, _, _ = tcp_server.request("GET", "/v1/health")
    assert status == 200


def test_a_large_response_reaches_a_reader_that_pauses(tcp_server):
    """The server writes without blocking and waits only when the socket is full: a response
    far larger than the socket's buffer, to a client that stops reading for a while, still
    arrives whole, head and body."""
    session = tcp_server.session()
    content = os.urandom(4 << 20)
    status, _, _ = tcp_server.request("PUT", f"/v1/sessions/{session}/files/big.bin", content)
    assert status == 200
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(tcp_server.socket_path)
    sock.sendall(("GET /v1/sessions/%s/files/big.bin HTTP/1.1\r\nHost: x\r\nX-Sbx-Token: %s\r\n"
                  "Connection: close\r\n\r\n" % (session, TOKEN)).encode())
    time.sleep(0.5)  # the server fills the socket and must wait (under --request-timeout 1)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    sock.close()
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"content-length: %d" % len(content) in head.lower()
    assert body == content
    tcp_server.request("DELETE", f"/v1/sessions/{session}")
