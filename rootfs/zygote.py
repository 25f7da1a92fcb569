"""The sbx zygote: a Python with the data stack imported that forks one isolated session per request.

Installed in the image as /usr/lib/sbx/zygote.py. The warm pool (src/executor/session_pool.cc)
starts it as the program of a base sandbox that keeps its capabilities inside its own user
namespace and has no seccomp filter (RunSpec::zygote_keeps_namespace_capabilities), with the
image bound read-only at /.sbx-image, the pool's workspace root at /workspace, and sbx's
session library (sandbox/session_setup/session_setup.h) bound read-only at the path the config
names. Every isolation step of a session (2-8 below) is that library's C++, the same code that
isolates a cold sandbox; this file only forks, talks to the host and serves. The zygote itself
never runs untrusted code. Protocol on fd 0 (frames as in session_driver.py):

  host   -> {"op": "config", "library": "/.sbx-session-setup.so", "seccomp": base64 BPF,
             "last_cap": 40, "rootfs_size_bytes": N, "tmp_size_bytes": N,
             "idle_seconds": 900.0, "warmup": "code", "prefault": "code",
             "prefault_budget_pages": 1024, "first_execution_prefault_pages": 4096}
  zygote -> {"op": "ready", "threads": 1}            the stack is imported and warmed up
  host   -> {"op": "spawn", "workspace": "s-7", "rlimits": [[resource, value], ...]}
            with SCM_RIGHTS: the session's socket and an O_PATH fd of its workspace directory
Each spawn forks a session that becomes pid 1 of a fresh pid namespace (the library's fork, so
that before CPython's after-fork callbacks run it copies the zygote pages a set-up writes:
zygote_prefault.Fork) and, in this order (2-4 are sbx_session_enter, 5-8
sbx_session_lock_down, as the cold path's sandbox/launcher.h):
  1. dies with the zygote (PR_SET_PDEATHSIG); writes one byte on its socket, to which the
     kernel attaches its pid as the host sees it (the host set SO_PASSCRED), so the host can
     hold it with a pidfd and move it into its cgroup (cgroup v1) meanwhile;
  2. unshares mount, net, ipc and uts namespaces; makes every mount private;
  3. builds its root as a cold sandbox's (sandbox/fs/mounts.h): a scratch tmpfs, an overlay
     (lower: the image, upper: the scratch), the image's /usr read-only, its workspace bound at
     /workspace (re-opened without symlinks, checked by device and inode against the host's
     fd), a fresh /proc with the masks, a minimal /dev, a /tmp tmpfs; pivot_root and detaches
     the old root (the zygote's tree, the other workspaces, the image path);
  4. hostname "sandbox", lo up;
  5. waits for the host's "cgroup placed" byte, then unshares a cgroup namespace;
  6. rlimits; chdir /workspace; drops the bounding and ambient sets; no groups; uid and gid
     1000; parent-death signal re-armed; every capability set empty; no_new_privs;
  7. stdin, stdout, stderr on /dev/null; every other fd but the session socket closed;
  8. installs the seccomp filter (the program the host sent, with TSYNC): the last step of
     the isolation; copies the zygote pages a first execution would write (zygote_prefault.py,
     learned once at start from an empty cell and the pre-fault code, within what is left of
     prefault_budget_pages after the fork's), so the first request does not pay for those
     faults; then sends {"op": "prepared"};
  9. serves session_driver.py's protocol on the socket (its "ready" frame first); when the
     first execution arrives, copies the learned pages that did not fit the first budget
     (within first_execution_prefault_pages) in one batch before the cell runs.
A step that fails sends {"op": "setup_failed", "step": ..., "errno": ..., "message": ...} on
the session socket and exits 125: the host discards the session and says which step failed.
A library that cannot be loaded (one built for a newer glibc than the image's) ends the zygote
before it is ready, saying so on stderr, which the host's error quotes.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # single-threaded at fork time

import array
import base64
import ctypes
import gc
import json
import select
import signal
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import session_driver  # noqa: E402
import zygote_prefault  # noqa: E402

SCRATCH = "/tmp"  # covered by the session's own scratch tmpfs in its mount namespace
STEP_NAME_BYTES = 256


def load_library(path):
    """The session library with its C signatures; None with a reason on stderr if it cannot load."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        sys.stderr.write("sbx zygote: cannot load the session library %s: %s (it must be built "
                         "for a glibc no newer than the image's)\n" % (path, e))
        return None
    c = ctypes
    lib.sbx_zygote_unshare_pid.argtypes = []
    lib.sbx_zygote_setns_pid.argtypes = [c.c_int]
    lib.sbx_private_tmpfs.argtypes = [c.c_char_p, c.c_char_p]
    lib.sbx_session_enter.argtypes = [c.c_char_p, c.c_int, c.c_ulonglong, c.c_ulonglong, c.c_char_p,
                                      c.c_size_t]
    lib.sbx_prefault.argtypes = [c.POINTER(c.c_ulonglong), c.c_size_t]
    lib.sbx_prefault.restype = None
    lib.sbx_session_lock_down.argtypes = [c.c_int, c.POINTER(c.c_ulonglong), c.c_size_t, c.c_int,
                                          c.c_char_p, c.c_size_t, c.c_char_p, c.c_size_t]
    return lib


class SetupError(Exception):
    def __init__(self, step, err, detail=""):
        super().__init__(step)
        self.step, self.errno, self.detail = step, err, detail


def check(err, step):
    """A library call's result: 0, or an errno with `step` (a buffer it filled, or a name)."""
    if err != 0:
        name = step if isinstance(step, str) else step.value.decode(errors="replace")
        raise SetupError(name, err, os.strerror(err))


class Zygote:
    def __init__(self, control, config, lib, learned):
        fork_ranges, prefault_ranges, first_execution_ranges = learned
        self.control = control
        self.config = config
        self.lib = lib
        self.fork = zygote_prefault.Fork(config["library"])
        self.fork_prefault = zygote_prefault.pack(fork_ranges)
        self.prefault = zygote_prefault.pack(prefault_ranges)
        self.first_execution_prefault = zygote_prefault.pack(first_execution_ranges)
        self.seccomp = base64.b64decode(config["seccomp"])
        if not self.seccomp or len(self.seccomp) % 8:
            raise ValueError("seccomp program: %d bytes, not a whole number of instructions"
                             % len(self.seccomp))
        self.pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    # ---- the zygote's loop ----------------------------------------------------------------

    def serve(self):
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        while True:
            ready, _, _ = select.select([self.control, wake_r], [], [])
            if wake_r in ready:
                while True:
                    try:
                        if not os.read(wake_r, 256):
                            break
                    except BlockingIOError:
                        break
                self.reap()
            if self.control in ready:
                request, fds = self.read_request()
                if request is None:
                    return 0  # the host closed the control socket
                try:
                    if request.get("op") != "spawn" or len(fds) != 2:
                        sys.stderr.write("sbx zygote: bad request %r with %d fds\n"
                                         % (request, len(fds)))
                        return 3
                    self.spawn(request, fds[0], fds[1])
                finally:
                    for fd in fds:
                        os.close(fd)
                self.reap()

    @staticmethod
    def reap():
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def read_request(self):
        fds = array.array("i")
        header, ancillary, _, _ = self.control.recvmsg(4, socket.CMSG_LEN(4 * fds.itemsize))
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - (len(data) % fds.itemsize)])
        if not header:
            return None, list(fds)
        if len(header) < 4:
            header += session_driver.read_exact(self.control.fileno(), 4 - len(header))
        (length,) = struct.unpack(">I", header)
        if length > 1 << 16:
            raise ValueError("control frame of %d bytes" % length)
        body = session_driver.read_exact(self.control.fileno(), length)
        return json.loads(body), list(fds)

    def spawn(self, request, channel, workspace_fd):
        name = request.get("workspace", "")
        check(self.lib.sbx_zygote_unshare_pid(), "unshare(CLONE_NEWPID)")
        pid = self.fork(self.fork_prefault)
        if pid == 0:
            self.session_child(channel, workspace_fd, name, request.get("rlimits", []))
        # Back to our own pid namespace for the next fork (an unshare(CLONE_NEWPID) on top of
        # one not yet used would fail); if that fails, no further session may be made here.
        err = self.lib.sbx_zygote_setns_pid(self.pidns)
        if err != 0:
            sys.stderr.write("sbx zygote: setns(pid): %s\n" % os.strerror(err))
            os._exit(3)

    # ---- the session child (steps 1-9 of the module docstring) ---------------------------

    def session_child(self, channel, workspace_fd, name, rlimits):
        try:
            os.write(channel, b"h")
        except OSError:
            os._exit(125)
        step = "fork"
        try:  # the session process: nothing below returns to the zygote's loop
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            failed = ctypes.create_string_buffer(STEP_NAME_BYTES)
            config = self.config
            check(self.lib.sbx_session_enter(name.encode(), workspace_fd,
                                             int(config["rootfs_size_bytes"]),
                                             int(config["tmp_size_bytes"]), failed, len(failed)),
                  failed)
            step = "wait for cgroup placement"
            if session_driver.read_exact(channel, 1) != b"c":
                raise SetupError(step, 71, "unexpected message from the host")
            pairs = [int(v) for pair in rlimits for v in pair]
            limits = (ctypes.c_ulonglong * max(len(pairs), 1))(*pairs)
            check(self.lib.sbx_session_lock_down(channel, limits, len(pairs) // 2,
                                                 int(config["last_cap"]), self.seccomp,
                                                 len(self.seccomp), failed, len(failed)),
                  failed)
            # fds 1 and 2 are /dev/null now; Python's own objects for them are made anew.
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
            self.lib.sbx_prefault(*self.prefault)
            session_driver.write_frame(channel, b'{"op": "prepared"}')
        except SetupError as e:
            self.fail(channel, e.step, e.errno, e.detail)
        except OSError as e:
            self.fail(channel, step, e.errno or 5, str(e))
        except BaseException as e:  # anything else is a setup failure too: fail closed
            self.fail(channel, step, 5, repr(e))
        rest, count = self.first_execution_prefault
        try:
            code = session_driver.serve(channel, float(self.config.get("idle_seconds", 0)),
                                        (lambda: self.lib.sbx_prefault(rest, count)) if count
                                        else None)
        except BaseException:
            code = 3
        os._exit(code)

    @staticmethod
    def fail(channel, step, err, detail):
        try:
            session_driver.write_frame(channel, json.dumps(
                {"op": "setup_failed", "step": step, "errno": err, "message": detail}).encode())
        finally:
            os._exit(125)


def warm_up(code):
    """Imports the stack and runs the warm-up code once, so lazy imports happen here."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import scipy  # noqa: F401
    if code:
        exec(compile(code, "<sbx warm-up>", "exec"), {"__name__": "__sbx_warmup__"})
    # matplotlib empties its font cache in every forked child (a cached font refers to the
    # FreeType library of the process that made it). Emptied here once, the zygote has none left
    # to free, so a fork no longer copies the ~150 pages that freeing them writes; a session
    # loads its own fonts, as it did.
    import matplotlib.font_manager
    font_cache = getattr(matplotlib.font_manager, "_get_font", None)
    if font_cache is not None and hasattr(font_cache, "cache_clear"):
        font_cache.cache_clear()


def first_executions(lib, code):
    """For zygote_prefault.learn's fork: a session's driver (prepare) and its first requests,
    an empty cell, then `code`. The empty cell writes what every first execution writes (the
    driver's own objects), so those pages are taken first."""
    session = []

    def prepare():
        # The cell files go to a tmpfs of this throwaway fork, not to the zygote's /tmp.
        check(lib.sbx_private_tmpfs(SCRATCH.encode(), b"size=16m,mode=0700"), "private scratch")
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (1, 2):
            os.dup2(null, fd)
        pair = socket.socketpair()  # kept open with the session: its channel is one end
        session.append(session_driver.Session(pair[0].fileno()))
        session.append(pair)

    def cell(number, source):
        return lambda: session[0].execute({"id": number, "language": "python"}, source.encode())
    return prepare, [cell(1, "pass\n"), cell(2, code)]


def main():
    control = socket.socket(fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    config = json.loads(session_driver.read_frame(control.fileno()))
    if config.get("op") != "config":
        sys.stderr.write("sbx zygote: expected a config frame\n")
        return 3
    lib = load_library(config.get("library", ""))
    if lib is None:
        return 3
    warm_up(config.get("warmup", ""))
    session_driver.set_up_process()
    # Everything alive now moves to the permanent generation: a session's collections then
    # never walk (and so never copy) the zygote's objects.
    gc.collect()
    gc.freeze()
    prefault_code = config.get("prefault", "")
    budgets = [int(config.get("prefault_budget_pages", 0)),
               int(config.get("first_execution_prefault_pages", 0))]
    learned = (zygote_prefault.learn(*first_executions(lib, prefault_code), budgets)
               if prefault_code and sum(budgets) > 0 else ([], [], []))
    threads = len(os.listdir("/proc/self/task"))
    zygote = Zygote(control, config, lib, learned)

    def pages(ranges):
        return sum(n for _, n in ranges) // zygote_prefault.PAGE
    session_driver.write_frame(control.fileno(), json.dumps(
        {"op": "ready", "threads": threads, "python_threads": threading.active_count(),
         "prefault_pages": pages(learned[0]) + pages(learned[1]),
         "first_execution_prefault_pages": pages(learned[2])}).encode())
    if threads != 1:
        sys.stderr.write("sbx zygote: %d threads after the imports; refusing to fork\n" % threads)
        return 3
    return zygote.serve()


if __name__ == "__main__":
    sys.exit(main())
