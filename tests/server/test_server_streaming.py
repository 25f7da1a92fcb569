"""Streamed executions (Accept: application/x-ndjson): events as the code writes, then the result."""
import json
import socket
import time

import pytest

from conftest import Server, processes_with, wait_until

NDJSON = {"Accept": "application/x-ndjson", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def streaming_server():
    running = Server("--pool", "1", "--keepalive", "1")
    yield running
    running.stop()


def events_of(response):
    """Each NDJSON line of a chunked answer as it arrives, with the time it came."""
    while True:
        line = response.readline()
        if not line:
            return
        yield time.monotonic(), json.loads(line)


def post_streaming(server, path, body):
    connection = server.connection()
    connection.request("POST", path, body=json.dumps(body).encode(), headers=NDJSON)
    response = connection.getresponse()
    return connection, response


def test_output_arrives_while_the_code_runs_then_the_result(streaming_server):
    server = streaming_server
    session = server.session()
    # The code pauses 2.5 s between its prints: live events put at least that gap between the
    # first print's arrival and the result's; events sent only at the end arrive together.
    code = ("import sys, time\nprint('first', flush=True)\ntime.sleep(2.5)\n"
            "print('second')\nsys.stderr.write('warn\\n')\n")
    connection, response = post_streaming(server, f"/v1/sessions/{session}/execute",
                                          {"code_blocks": [{"language": "python", "code": code}]})
    try:
        assert response.status == 200
        assert response.getheader("Content-Type") == "application/x-ndjson"
        assert response.getheader("Transfer-Encoding") == "chunked"
        timed = list(events_of(response))
    finally:
        connection.close()
    events = [event for _, event in timed]
    kinds = [e["type"] for e in events if e["type"] != "keepalive"]
    assert kinds[-1] == "result" and kinds.count("result") == 1
    # print() may write "first" and "\n" apart, and each write may be its own event.
    first_at, sofar = None, ""
    for at, event in timed:
        sofar += event.get("text", "") if event["type"] == "stdout" else ""
        if first_at is None and sofar.startswith("first\n"):
            first_at = at
    assert first_at is not None, events
    assert timed[-1][0] - first_at >= 2.0, "the first print arrived only with the result"
    streamed = "".join(e["text"] for e in events if e["type"] == "stdout")
    assert streamed == "first\nsecond\n"
    assert "".join(e["text"] for e in events if e["type"] == "stderr") == "warn\n"
    result = events[-1]["result"]
    assert result["stdout"] == streamed and result["exit_code"] == 0 and result["status"] == "exited"


def test_keepalives_during_silence_and_exec_streams_too(streaming_server):
    server = streaming_server
    session = server.session()
    connection, response = post_streaming(server, f"/v1/sessions/{session}/exec",
                                          {"shell": "sleep 3.5; echo done"})
    try:
        events = [e for _, e in events_of(response)]
    finally:
        connection.close()
    assert sum(e["type"] == "keepalive" for e in events) >= 2, events
    assert {"type": "stdout", "text": "done\n"} in events
    assert events[-1]["type"] == "result"
    assert events[-1]["result"]["exit_code"] == 0
    assert events[-1]["result"]["stdout"] == "done\n"


def test_errors_before_the_first_event_are_plain_answers(streaming_server):
    server = streaming_server
    status, error, _ = server.request("POST", "/v1/sessions/s-nope/execute",
                                      {"code_blocks": [{"language": "python", "code": "1"}]},
                                      headers={"Accept": "application/x-ndjson"})
    assert status == 404 and error["error"]["code"] == "not_found"
    session = server.session()
    status, error, _ = server.request("POST", f"/v1/sessions/{session}/execute", {"code_blocks": []},
                                      headers={"Accept": "application/x-ndjson"})
    assert status == 400 and "code_blocks" in error["error"]["message"]
    # Without the header the same execution is one JSON answer, as before.
    status, result, headers = server.request(
        "POST", f"/v1/sessions/{session}/execute",
        {"code_blocks": [{"language": "python", "code": "print(2**10)"}]})
    assert status == 200 and result["stdout"] == "1024\n"
    assert headers["Content-Type"] == "application/json"


def test_a_client_that_leaves_mid_stream_cancels_the_execution(streaming_server):
    server = streaming_server
    session = server.session()
    server.execute(session, "x = 1")
    connection, response = post_streaming(
        server, f"/v1/sessions/{session}/execute",
        {"code_blocks": [{"language": "bash", "code": "echo started; exec sleep 4141.5"}]})
    first = next(events_of(response))[1]
    assert first == {"type": "stdout", "text": "started\n"}
    assert wait_until(lambda: processes_with(b"4141.5"), 30)
    connection.close()
    assert wait_until(lambda: not processes_with(b"4141.5"), 10)
    result = server.execute(session, "print('x' in globals())")
    assert result["stdout"] == "False\n" and "cancelled" in result["notice"]


def test_a_client_that_stops_reading_is_cut_off_and_cancelled():
    # A short --request-timeout: a client that takes no bytes for that long while output waits
    # is treated as gone, so a flood cannot hold a session and a server thread forever.
    server = Server("--pool", "0", "--request-timeout", "2")
    try:
        session = server.session()
        body = json.dumps({"code_blocks": [{"language": "python", "code":
                          "import sys\nfor i in range(10**6): sys.stdout.write('y' * 1000 + '\\n')"}]}
                          ).encode()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(server.socket_path)
        sock.sendall(b"POST /v1/sessions/%s/execute HTTP/1.1\r\nHost: x\r\n"
                     b"Accept: application/x-ndjson\r\nContent-Length: %d\r\n\r\n"
                     % (session.encode(), len(body)) + body)
        # Read nothing: the server's writes fill the socket and stall past the timeout.
        started = time.monotonic()
        busy = lambda: server.request("GET", f"/v1/sessions/{session}")[1]["busy"]
        # First see the flood hold the session: on a loaded machine the server may not have
        # read the request yet, and "not busy" would then say nothing about the cut-off.
        assert wait_until(lambda: busy() is True, 30), "the flood never started"
        assert wait_until(lambda: busy() is False, 60)
        assert time.monotonic() - started < 60
        sock.close()
        result = server.execute(session, "print('fresh')")
        assert result["stdout"] == "fresh\n" and "cancelled" in result["notice"]
    finally:
        server.stop()
