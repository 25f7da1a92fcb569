"""The sbx session driver: runs code blocks in one persistent Python namespace.

Installed in the image as /usr/lib/sbx/session_driver.py; the executor (src/executor/) starts
it as the program of a session's sandbox with a socket as fd 0, and speaks this protocol:

  frame     = 4-byte big-endian length N, then N bytes (N <= MAX_FRAME)
  driver -> {"op": "ready", "python": "3.11.2"}                      once, at start
  host   -> {"op": "exec", "id": 7, "language": "python"|"bash"|"sh",
             "timeout_seconds": 30.0, "output_bytes": 1048576,
             "figures_dir": "output/figures", "stream": false}        then a frame of source bytes
  driver -> {"op": "output", "id": 7, "stream": "stdout"|"stderr",
             "text": "..."}                                   only with "stream": true, as the
                                                              cell writes, before its reply
  driver -> {"id": 7, "outcome": "ok"|"error"|"timeout", "exit_code": 0,
             "stdout": "...", "stderr": "...", "output": [["stdout", "..."], ...] | "stdout",
             "stdout_truncated": false, "stderr_truncated": false,
             "result": "repr of a trailing expression" | null,
             "error": {"type": ..., "message": ..., "traceback": ...} | null,
             "figures": ["output/figures/cell-7-1.png"], "cpu_ms": 12}
  host   -> {"op": "close"}                                           the driver exits 0

Before each Python cell the driver adds the user site if an earlier cell's `pip install --user`
created it (Python looks for it only at start-up), so the next cell imports what pip installed.
The source reaches Python as a file (cell-<id>.py in the driver's own cell directory,
$TMPDIR/.sbx-cells-<random>, mode 0700, removed when the driver ends), compiled from its bytes
as `python3 file.py` would (PEP 263 coding, CRLF, NUL bytes are a SyntaxError), so
tracebacks show its lines. Output of the code and of every process it starts goes through
fds 1 and 2, which point at pipes drained by a thread while the cell runs, so `print`,
`os.system` and subprocesses all land in order. The drained output is also copied to the
session's own stdout and stderr after a CELL_MARKER line, so the host can recover a cell's
output from the sandbox's capture when it had to kill the session. The timeout raises KeyboardInterrupt in the
cell; a cell that survives it is killed by the host together with the whole session.
With "stream": true the drained output is also sent as "output" frames while the cell runs
(at most output_bytes of each stream: the reply still carries head and tail), decoded as
UTF-8 across chunk boundaries, so a character split between two reads is never mangled.
A malformed request ends the driver with exit code 3: the host treats that as a lost session.
The cell's code shares this process and can write to the channel itself, so the host trusts a
reply only as far as its shape: within a size derived from output_bytes, at most 8 levels deep
and 2**18 values, figures named as above, and nothing sent before a request was made.
"""

import ast
import builtins
import codecs
import fcntl
import importlib
import io
import json
import os
import resource
import select
import signal
import site
import struct
import subprocess
import sys
import threading
import time
import traceback
import warnings

MAX_FRAME = 256 << 20
MAX_REPR = 64 << 10
# Interleaved chunks kept per cell (consecutive chunks of one stream are merged): the runner
# refuses a reply of more than 2**18 JSON values (session_protocol.h).
MAX_ORDER_CHUNKS = 65536
CELL_DIR_PREFIX = ".sbx-cells-"
DRIVER_FILE = os.path.abspath(__file__)
# Written to the session's own stdout and stderr before each cell's mirrored output.
CELL_MARKER = b"\x1esbx-cell %d\x1e\n"
# A cell's pipe starts at the kernel's 64 KiB and is read 64 KiB at a time. A read that fills
# that means the cell prints faster than it is read: the pipe then grows to a MiB (the default
# cap for an unprivileged process) and is read a MiB at a time. At 64 KiB a cell printing a GiB
# woke itself and this driver 16 times as often, and those wake-ups were most of output's cost.
# Only such cells grow their pipes: the pages a pipe may hold count against its user's share
# (fs.pipe-user-pages-soft), and a pipe lives as long as its cell.
PIPE_START_BYTES = 1 << 16
PIPE_BYTES = 1 << 20


def make_cell_dir():
    """A directory of this driver's own, made afresh (mkdir never reuses one that exists):
    drivers that share a /tmp (the local executor, isolation "outer") never read or replace
    each other's cell files, and a directory another user made in advance is never used."""
    parent = os.environ.get("TMPDIR") or "/tmp"
    for _ in range(16):
        path = os.path.join(parent, CELL_DIR_PREFIX + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
    raise OSError(17, "no fresh cell directory in %s after 16 tries" % parent)


def cut(text):
    """Head and tail of a text within MAX_REPR: the runner sizes its reply cap on that."""
    if len(text) <= MAX_REPR:
        return text
    return text[:MAX_REPR // 2] + "\n[... cut by sbx ...]\n" + text[-MAX_REPR // 2:]


class ProtocolError(Exception):
    pass


def read_exact(fd, n):
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd):
    (length,) = struct.unpack(">I", read_exact(fd, 4))
    if length > MAX_FRAME:
        raise ProtocolError("frame of %d bytes exceeds %d" % (length, MAX_FRAME))
    return read_exact(fd, length)


def write_frame(fd, payload):
    # Length and payload in one writev: no copy of MiBs of payload to put 4 bytes before it.
    parts = [memoryview(struct.pack(">I", len(payload))), memoryview(payload)]
    while parts:
        sent = os.writev(fd, parts)
        while parts and sent >= len(parts[0]):
            sent -= len(parts[0])
            parts.pop(0)
        if parts:
            parts[0] = parts[0][sent:]


def widen_pipe(fd):
    """Whether the pipe now holds PIPE_BYTES. A lower pipe-max-size, or a user whose pipes
    already hold their share of pages, keeps the size it has, which only costs speed."""
    try:
        return fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES) >= PIPE_BYTES
    except OSError:
        return False


def wait_for_exit(process, timeout):
    """Popen.wait(timeout) polls, sleeping up to 50 ms between looks, so it would notice a
    command's end up to 50 ms late, on every shell cell. A pidfd turns readable the moment the
    process exits. Without one (pidfd_open refused), Popen's own wait."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        return process.wait(timeout)
    try:
        waiter = select.poll()
        waiter.register(pidfd, select.POLLIN)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(process.args, timeout)
            if waiter.poll(min(left, 60) * 1000):
                break
    finally:
        os.close(pidfd)
    return process.wait()


class StreamCapture:
    """Head and tail of one stream within a byte budget, like the sandbox's own capture."""

    def __init__(self, budget):
        self.head_budget = budget // 2
        self.tail_budget = budget - self.head_budget
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, data):
        room = self.head_budget - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if len(data) >= self.tail_budget:  # the whole tail is new: copy just its end
            self.dropped += len(self.tail) + len(data) - self.tail_budget
            self.tail[:] = data[len(data) - self.tail_budget:]
        elif data:
            self.tail += data
            excess = len(self.tail) - self.tail_budget
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    def text(self):
        marker = b""
        if self.dropped:
            marker = b"\n[... %d bytes cut by sbx ...]\n" % self.dropped
        return b"".join((self.head, marker, self.tail)).decode("utf-8", "replace")


class OutputStreamer:
    """Sends a cell's output to the host as "output" frames, within a budget per stream."""

    def __init__(self, channel, cell, budget):
        self.channel = channel
        self.cell = cell
        self.left = {"stdout": budget, "stderr": budget}
        self.decoders = {name: codecs.getincrementaldecoder("utf-8")("replace")
                         for name in self.left}

    def send(self, name, data, final=False):
        data = data[:self.left[name]]
        self.left[name] -= len(data)
        text = self.decoders[name].decode(bytes(data), final)
        if text:
            frame = {"op": "output", "id": self.cell, "stream": name, "text": text}
            write_frame(self.channel, json.dumps(frame, ensure_ascii=False).encode(
                "utf-8", "replace"))

    def finish(self):
        for name in self.left:
            self.send(name, b"", final=True)


class OutputPipes:
    """Points fds 1 and 2 at fresh pipes for one cell and drains them on a thread."""

    def __init__(self, cell, budget, streamer=None):
        self.streamer = streamer
        self.captures = {"stdout": StreamCapture(budget), "stderr": StreamCapture(budget)}
        self.order = []  # [stream, bytes] chunks as they arrived, within 2 * budget
        self.order_budget = 2 * budget
        self.order_bytes = 0
        self.order_cut = False
        self.saved = {1: os.dup(1), 2: os.dup(2)}
        for fd in self.saved.values():
            os.write(fd, CELL_MARKER % cell)
        self.readers = {}
        for fd, name in ((1, "stdout"), (2, "stderr")):
            r, w = os.pipe()
            os.dup2(w, fd)
            os.close(w)
            os.set_blocking(r, False)
            self.readers[r] = name
        # Read into a buffer of the pipe's size, reused: os.read would allocate (and for a MiB,
        # map and unmap) a fresh one for every read.
        self.buffers = {r: memoryview(bytearray(PIPE_START_BYTES)) for r in self.readers}
        self.stop = False
        # Written by finish(), so the drain thread wakes at once instead of at its next poll.
        self.wake_r, self.wake_w = os.pipe()
        self.thread = threading.Thread(target=self.drain, daemon=True)
        self.thread.start()

    def take(self, fd):
        buffer = self.buffers[fd]
        try:
            got = os.readv(fd, [buffer])
        except BlockingIOError:
            return False
        if not got:
            return False
        data = buffer[:got]  # each use below copies it before the next read
        if got == len(buffer) < PIPE_BYTES and widen_pipe(fd):
            self.buffers[fd] = memoryview(bytearray(PIPE_BYTES))
        name = self.readers[fd]
        self.captures[name].add(data)
        if self.streamer is not None:
            self.streamer.send(name, data)
        # Mirrored to the session's own output, which the host keeps (head and tail) even if it
        # has to kill the session: the output of a cell that ignored its timeout survives.
        try:
            os.write(self.saved[1 if name == "stdout" else 2], data)
        except OSError:
            pass
        self.keep_in_order(name, data)
        return True

    def keep_in_order(self, name, data):
        """The output in order is its head: what fits of a chunk is kept and the rest cut, so a
        MiB read at once does not lose the room left before it, and nothing after a cut is kept
        (a later, smaller chunk would leave a hole)."""
        if self.order_cut:
            return
        merges = bool(self.order) and self.order[-1][0] == name
        if not merges and len(self.order) >= MAX_ORDER_CHUNKS:
            self.order_cut = True
            return
        room = self.order_budget - self.order_bytes
        if len(data) > room:
            data = data[:room]
            self.order_cut = True
        if not data:
            return
        if merges:
            self.order[-1][1] += data
        else:
            self.order.append([name, bytearray(data)])
        self.order_bytes += len(data)

    def output_in_order(self):
        """The chunks as they arrived; or, when all of it came from one stream and none of it
        was cut, that stream's name: its text is in the reply already, and a MiB of output need
        not be escaped, sent and parsed twice."""
        if len(self.order) == 1 and not self.order_cut:
            name = self.order[0][0]
            if not self.captures[name].dropped:
                return name
        return [[name, data.decode("utf-8", "replace")] for name, data in self.order]

    def drain(self):
        watched = list(self.readers) + [self.wake_r]
        while not self.stop:
            ready, _, _ = select.select(watched, [], [], 0.05)
            for fd in ready:
                if fd != self.wake_r:
                    self.take(fd)

    def finish(self):
        """Restores fds 1 and 2; everything written before now is in the pipes and is read."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        for fd, saved in self.saved.items():
            os.dup2(saved, fd)
            os.close(saved)
        self.stop = True
        os.write(self.wake_w, b"x")
        self.thread.join()
        os.close(self.wake_r)
        os.close(self.wake_w)
        for fd in self.readers:
            while self.take(fd):
                pass
            os.close(fd)  # a background process writing later gets EPIPE
        if self.streamer is not None:
            self.streamer.finish()


class CellTimeout(BaseException):
    pass


class Session:
    def __init__(self, channel):
        self.channel = channel
        self.namespace = {"__name__": "__main__", "__builtins__": builtins}
        self.home = os.getcwd()  # figures are saved relative to it, wherever a cell chdirs
        self.in_cell = False
        # Unbuffered text streams on fds 1 and 2, so Python's writes and those of child
        # processes reach the pipes in the order they were made.
        self.streams = tuple(
            io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8",
                             errors="backslashreplace", write_through=True)
            for fd in (1, 2))
        self.cell_dir = make_cell_dir()

    def remove_cell_dir(self):
        """The cells' files, best effort: a sandbox's /tmp ends with it anyway."""
        try:
            for name in os.listdir(self.cell_dir):
                try:
                    os.unlink(os.path.join(self.cell_dir, name))
                except OSError:
                    pass
            os.rmdir(self.cell_dir)
        except OSError:
            pass

    def run(self, idle_seconds, before_first_cell=None):
        write_frame(self.channel, json.dumps(
            {"op": "ready", "python": sys.version.split()[0]}).encode())
        while True:
            ready, _, _ = select.select([self.channel], [], [], idle_seconds or None)
            if not ready:
                return 0  # idle timeout: the host sees the session end
            try:
                header = json.loads(read_frame(self.channel))
            except EOFError:
                return 0
            except (ProtocolError, ValueError) as e:
                sys.stderr.write("sbx session driver: bad request frame: %s\n" % e)
                return 3
            if not isinstance(header, dict) or header.get("op") not in ("exec", "close"):
                sys.stderr.write("sbx session driver: unknown request %r\n" % (header,))
                return 3
            if header["op"] == "close":
                return 0
            try:
                source = read_frame(self.channel)
            except (EOFError, ProtocolError) as e:
                sys.stderr.write("sbx session driver: missing source frame: %s\n" % e)
                return 3
            if before_first_cell is not None:
                before_first_cell()
                before_first_cell = None
            reply = self.execute(header, source)
            # Lone surrogates (from a repr, say) would make the JSON invalid: replaced.
            text = json.dumps(reply, ensure_ascii=False)
            write_frame(self.channel, text.encode("utf-8", "replace"))

    def execute(self, header, source):
        cell = int(header.get("id", 0))
        language = header.get("language")
        timeout = float(header.get("timeout_seconds", 60))
        budget = int(header.get("output_bytes", 1 << 20))
        streamer = OutputStreamer(self.channel, cell, budget) if header.get("stream") else None
        pipes = OutputPipes(cell, budget, streamer)
        cpu_start = self.cpu_seconds()
        reply = {"id": cell, "outcome": "ok", "exit_code": 0, "result": None, "error": None,
                 "figures": []}
        try:
            if language == "python":
                self.run_python(cell, source, timeout, reply)
            else:
                self.run_shell(cell, language, source, timeout, reply)
            reply["figures"] = self.save_figures(cell, header.get("figures_dir"))
        finally:
            pipes.finish()
        reply["cpu_ms"] = int((self.cpu_seconds() - cpu_start) * 1000)
        for name, capture in pipes.captures.items():
            reply[name] = capture.text()
            reply[name + "_truncated"] = capture.dropped > 0
        reply["output"] = pipes.output_in_order()
        reply["output_truncated"] = pipes.order_cut
        return reply

    @staticmethod
    def cpu_seconds():
        """The driver's CPU time and that of the processes it has reaped (shell cells)."""
        total = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            usage = resource.getrusage(who)
            total += usage.ru_utime + usage.ru_stime
        return total

    def cell_file(self, cell, suffix, source):
        path = os.path.join(self.cell_dir, "cell-%d.%s" % (cell, suffix))
        with open(path, "wb") as f:
            f.write(source)
        return path

    def run_python(self, cell, source, timeout, reply):
        path = self.cell_file(cell, "py", source)
        sys.stdout, sys.stderr = self.streams  # again, in case the last cell replaced them

        def on_alarm(signum, frame):
            if self.in_cell:  # not once the cell has returned and the timer is being stopped
                raise CellTimeout()

        try:
            body, last = self.compile_cell(source, path)
        except (SyntaxError, ValueError) as e:  # as python3 prints it: no driver frames
            text = "".join(traceback.format_exception_only(type(e), e))
            reply.update(outcome="error", exit_code=1)
            reply["error"] = {"type": type(e).__name__, "message": cut(str(e)),
                              "traceback": cut(text)}
            sys.stderr.write(text)
            return
        self.pick_up_user_site()
        signal.signal(signal.SIGALRM, on_alarm)
        try:
            self.in_cell = True
            signal.setitimer(signal.ITIMER_REAL, timeout)
            exec(body, self.namespace)
            if last is not None:
                value = eval(last, self.namespace)
                if value is not None:
                    self.namespace["_"] = value
                    text = repr(value)
                    reply["result"] = text if len(text) <= MAX_REPR else (
                        text[:MAX_REPR] + "... [repr cut by sbx]")
        except CellTimeout:
            reply.update(outcome="timeout", exit_code=124)
            reply["error"] = {"type": "TimeoutError",
                              "message": "the execution exceeded %gs and was interrupted"
                                         % timeout, "traceback": ""}
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if e.code is not None and not isinstance(e.code, int):
                sys.stderr.write("%s\n" % (e.code,))
            reply["exit_code"] = code
            if code:
                reply["outcome"] = "error"
        except BaseException as e:
            reply.update(outcome="error", exit_code=1)
            reply["error"] = self.describe(e)
            sys.stderr.write(reply["error"]["traceback"])
        finally:
            self.in_cell = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            sys.stdout.flush()
            sys.stderr.flush()

    @staticmethod
    def pick_up_user_site():
        """Python looks at the user site (~/.local/lib/python3.X/site-packages) only at start-up,
        and a `pip install --user` in an earlier cell may have created it since: add it, with
        its .pth files, as a fresh python3 would, so the next cell can import what pip put
        there."""
        path = site.getusersitepackages()
        if site.ENABLE_USER_SITE and path not in sys.path and os.path.isdir(path):
            site.addsitedir(path)
            importlib.invalidate_caches()

    @staticmethod
    def compile_cell(source, path):
        if b"\0" in source:  # python3 file.py's own words (compile() says ValueError)
            raise SyntaxError("source code cannot contain null bytes", (path, 1, 0, ""))
        tree = ast.parse(source, path)  # bytes: the coding cookie and BOM rules of a file
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = compile(ast.Expression(tree.body.pop().value), path, "eval")
        return compile(tree, path, "exec"), last

    @staticmethod
    def describe(error):
        te = traceback.TracebackException.from_exception(error)
        te.stack = traceback.StackSummary.from_list(
            [f for f in te.stack if f.filename != DRIVER_FILE])
        text = "".join(te.format())
        text = cut(text)
        return {"type": type(error).__name__, "message": cut(str(error)), "traceback": text}

    def run_shell(self, cell, language, source, timeout, reply):
        path = self.cell_file(cell, "sh", source)
        process = subprocess.Popen([language, path], stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        try:
            reply["exit_code"] = wait_for_exit(process, timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # its group; the pid is ours, not reaped
            process.wait()
            reply.update(outcome="timeout", exit_code=124)
            reply["error"] = {"type": "TimeoutError",
                              "message": "the execution exceeded %gs and was killed" % timeout,
                              "traceback": ""}
            return
        if reply["exit_code"] < 0:
            reply["exit_code"] = 128 - reply["exit_code"]
        if reply["exit_code"]:
            reply["outcome"] = "error"

    def save_figures(self, cell, figures_dir):
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None or not figures_dir:
            return []
        saved = []
        numbers = plt.get_fignums()
        if numbers:
            os.makedirs(os.path.join(self.home, figures_dir), exist_ok=True)
        for index, number in enumerate(numbers, 1):
            path = os.path.join(figures_dir, "cell-%d-%d.png" % (cell, index))
            try:
                plt.figure(number).savefig(os.path.join(self.home, path))
                saved.append(path)
            except Exception as e:
                sys.stderr.write("sbx: could not save figure %d: %s\n" % (number, e))
        plt.close("all")
        return saved


def set_up_process():
    """What every session's process needs before its first cell. Idempotent: zygote.py runs it
    once before it forks, so a session's own run finds the regular expression compiled and the
    environment set, and copies fewer of the zygote's pages."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    # plt.show() on Agg returns at once; its "non-interactive" warning is noise here.
    warnings.filterwarnings("ignore", message=".*non-interactive.*")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sys.argv = ["cell"]


def serve(channel, idle_seconds, before_first_cell=None):
    """Runs the session on `channel`; also the entry of a session forked by zygote.py, which
    passes `before_first_cell` (called once, when the first execution has arrived)."""
    set_up_process()
    session = Session(channel)
    try:
        return session.run(idle_seconds, before_first_cell)
    finally:
        session.remove_cell_dir()


def main():
    idle_seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0
    channel = os.dup(0)  # the socket; user code gets /dev/null as stdin
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return serve(channel, idle_seconds)


if __name__ == "__main__":
    sys.exit(main())
