"""The sbx zygote: a Python with the data stack imported that forks one isolated session per request.

Installed in the image as /usr/lib/sbx/zygote.py. The warm pool (src/executor/session_pool.cc)
starts it as the program of a base sandbox that keeps its capabilities inside its own user
namespace and has no seccomp filter (RunSpec::zygote_keeps_namespace_capabilities), with the
image bound read-only at /.sbx-image and the pool's workspace root at /workspace. The zygote
itself never runs untrusted code. Protocol on fd 0 (frames as in session_driver.py):

  host   -> {"op": "config", "seccomp": base64 BPF, "last_cap": 40, "sandbox_id": 1000,
             "masks": {"files": [...], "read_only": [...], "hidden": [...], "devices": [...]},
             "scratch_options": "...", "tmp_options": "...", "shm_options": "...",
             "idle_seconds": 900.0, "warmup": "code", "prefault": "code",
             "prefault_budget_pages": 1024}
  zygote -> {"op": "ready", "threads": 1}            the stack is imported and warmed up
  host   -> {"op": "spawn", "workspace": "s-7", "rlimits": [[resource, value], ...]}
            with SCM_RIGHTS: the session's socket and an O_PATH fd of its workspace directory
Each spawn forks a session that becomes pid 1 of a fresh pid namespace and, in this order:
  1. dies with the zygote (PR_SET_PDEATHSIG); writes one byte on its socket, to which the
     kernel attaches its pid as the host sees it (the host set SO_PASSCRED), so the host can
     hold it with a pidfd and move it into its cgroup (cgroup v1) meanwhile;
  2. unshares mount, net, ipc and uts namespaces; makes every mount private;
  3. builds its root: a scratch tmpfs, an overlay (lower: the image, upper: the scratch),
     its workspace bound at /workspace (checked by device and inode against the host's fd),
     a fresh /proc with the host's masks, a minimal /dev, a /tmp tmpfs; pivot_root and
     detaches the old root (the zygote's tree, the other workspaces, the image path);
  4. hostname "sandbox", lo up;
  5. waits for the host's "cgroup placed" byte, then unshares a cgroup namespace;
  6. rlimits; drops the bounding and ambient sets; no groups; uid and gid 1000; every
     capability set empty; parent-death signal re-armed; no_new_privs;
  7. stdin, stdout, stderr on /dev/null; every other fd but the session socket closed;
  8. installs the seccomp filter (the program the host sent, with TSYNC): the last step of
     the isolation; copies the zygote pages a first execution would write (zygote_prefault.py,
     learned once at start from an empty cell and the pre-fault code, within the budget), so
     the first request does not pay for those faults; then sends {"op": "prepared"};
  9. serves session_driver.py's protocol on the socket (its "ready" frame first).
A step that fails sends {"op": "setup_failed", "step": ..., "errno": ..., "message": ...} on
the session socket and exits 125: the host discards the session and says which step failed.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # single-threaded at fork time

import array
import base64
import ctypes
import fcntl
import gc
import json
import re
import resource
import select
import signal
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import session_driver  # noqa: E402
import zygote_prefault  # noqa: E402

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
SAFE = MS_NOSUID | MS_NODEV
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
SYS_capset, SYS_pivot_root, SYS_seccomp = 126, 155, 317
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 1, 1
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP, IFF_RUNNING = 0x8913, 0x8914, 0x1, 0x40
IMAGE_DIR = "/.sbx-image"
SCRATCH = "/tmp"  # covered by the session's own scratch tmpfs in its mount namespace
WORKSPACE_NAME = re.compile(r"^[A-Za-z0-9-]{1,64}$")

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_char_p]
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                       ctypes.c_ulong]


class SetupError(Exception):
    def __init__(self, step, err, detail=""):
        super().__init__(step)
        self.step, self.errno, self.detail = step, err, detail


def check(rc, step):
    if rc != 0:
        err = ctypes.get_errno()
        raise SetupError(step, err, os.strerror(err))


def enc(path):
    return None if path is None else os.fsencode(path)


def mount(source, target, fstype, flags, data, step):
    check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), step)


def locked_flags(path):
    """Flags a bind remount inside a user namespace must keep (mounts.cc's LockedFlags)."""
    f = os.statvfs(path).f_flag
    flags = 0
    for st, ms in ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
                   (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME),
                   (os.ST_RELATIME, MS_RELATIME), (os.ST_RDONLY, MS_RDONLY)):
        if f & st:
            flags |= ms
    return flags


def bind_remount(path, extra, step):
    mount(None, path, None, MS_BIND | MS_REMOUNT | locked_flags(path) | extra, None, step)


class Zygote:
    def __init__(self, control, config, prefault_ranges):
        self.control = control
        self.config = config
        self.prefault_ranges = prefault_ranges
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
        check(libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
        pid = os.fork()
        if pid == 0:
            self.session_child(channel, workspace_fd, name, request.get("rlimits", []))
        # Back to our own pid namespace for the next fork (an unshare(CLONE_NEWPID) on top of
        # one not yet used would fail); if that fails, no further session may be made here.
        if libc.setns(self.pidns, CLONE_NEWPID) != 0:
            sys.stderr.write("sbx zygote: setns(pid): %s\n" % os.strerror(ctypes.get_errno()))
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
            check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
            step = "workspace name"
            if not WORKSPACE_NAME.fullmatch(name):
                raise SetupError("workspace name", 22, "invalid workspace name %r" % name)
            check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS),
                  "unshare(CLONE_NEWNS|CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS)")
            step = "build root"
            self.build_root(workspace_fd, name)
            step = "hostname"
            check(libc.sethostname(b"sandbox", 7), "sethostname")
            self.loopback_up()
            step = "wait for cgroup placement"
            if session_driver.read_exact(channel, 1) != b"c":
                raise SetupError(step, 71, "unexpected message from the host")
            check(libc.unshare(CLONE_NEWCGROUP), "unshare(CLONE_NEWCGROUP)")
            step = "drop privileges"
            self.drop_privileges(rlimits)
            self.clean_fds(channel)
            self.install_seccomp()
            zygote_prefault.prefault(self.prefault_ranges)
            session_driver.write_frame(channel, b'{"op": "prepared"}')
        except SetupError as e:
            self.fail(channel, e.step, e.errno, e.detail)
        except OSError as e:
            self.fail(channel, step, e.errno or 5, str(e))
        except BaseException as e:  # anything else is a setup failure too: fail closed
            self.fail(channel, step, 5, repr(e))
        try:
            code = session_driver.serve(channel, float(self.config.get("idle_seconds", 0)))
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

    def build_root(self, workspace_fd, name):
        masks = self.config["masks"]
        mount(None, "/", None, MS_REC | MS_PRIVATE, None, "mount private")
        mount("tmpfs", SCRATCH, "tmpfs", SAFE | MS_NOEXEC, self.config["scratch_options"],
              "mount scratch")
        os.chdir(SCRATCH)
        for d in ("upper", "work", "root"):
            os.mkdir(d, 0o755)
        # The image was bound read-only, nosuid, nodev by the launcher (kZygoteImageDir).
        mount("overlay", "root", "overlay", SAFE,
              "lowerdir=%s,upperdir=%s/upper,workdir=%s/work" % (IMAGE_DIR, SCRATCH, SCRATCH),
              "mount overlay")
        # The workspace: looked up under the zygote's /workspace without following symlinks,
        # and it must be the very directory the host passed.
        # Opened afresh in this mount namespace: a bind mount's source must belong to it.
        try:
            root = os.open("/workspace", os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                mine = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                               dir_fd=root)
            finally:
                os.close(root)
        except OSError as e:
            raise SetupError("mount workspace", e.errno, "open %s: %s" % (name, e.strerror))
        a, b = os.fstat(mine), os.fstat(workspace_fd)
        if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
            raise SetupError("mount workspace", 116, "not the directory the host passed")
        mount("/proc/self/fd/%d" % mine, "root/workspace", None, MS_BIND, None, "mount workspace")
        bind_remount("root/workspace", SAFE, "mount workspace")
        os.close(mine)
        mount("proc", "root/proc", "proc", SAFE | MS_NOEXEC, None, "mount proc")
        os.chdir("root")
        for path in masks["files"]:
            if os.path.exists(path):
                mount("/dev/null", path, None, MS_BIND, None, "mask proc")
        for path in masks["hidden"]:
            if os.path.exists(path):
                mount("tmpfs", path, "tmpfs", MS_RDONLY | SAFE | MS_NOEXEC, "size=4k,mode=0555",
                      "mask proc")
        for path in masks["read_only"]:
            if os.path.exists(path):
                mount(path, path, None, MS_BIND | MS_REC, None, "mask proc")
                bind_remount(path, MS_RDONLY | SAFE | MS_NOEXEC, "mask proc")
        os.chdir("..")
        self.build_dev(masks["devices"])
        mount("tmpfs", "root/tmp", "tmpfs", SAFE, self.config["tmp_options"], "mount tmp")
        os.chdir("root")
        check(libc.syscall(SYS_pivot_root, b".", b"."), "pivot_root")
        check(libc.umount2(b".", MNT_DETACH), "pivot_root")
        os.chdir("/")

    def build_dev(self, devices):
        step = "mount dev"
        mount("tmpfs", "root/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755", step)
        for device in devices:
            target = "root/dev/" + device
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o644))
            mount("/dev/" + device, target, None, MS_BIND, None, step)
        os.mkdir("root/dev/pts", 0o755)
        mount("devpts", "root/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=0620", step)
        os.symlink("pts/ptmx", "root/dev/ptmx")
        os.mkdir("root/dev/shm", 0o1777)
        mount("tmpfs", "root/dev/shm", "tmpfs", SAFE, self.config["shm_options"], step)
        for source, link in (("/proc/self/fd", "fd"), ("/proc/self/fd/0", "stdin"),
                             ("/proc/self/fd/1", "stdout"), ("/proc/self/fd/2", "stderr")):
            os.symlink(source, "root/dev/" + link)
        bind_remount("root/dev", MS_RDONLY | MS_NOSUID | MS_NOEXEC, step)

    @staticmethod
    def loopback_up():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            request = struct.pack("16sH22x", b"lo", 0)
            flags = struct.unpack("16sH22x", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP | IFF_RUNNING))
        except OSError as e:
            raise SetupError("loopback", e.errno, str(e))
        finally:
            s.close()

    def drop_privileges(self, rlimits):
        step = "rlimits"
        try:
            for res, value in rlimits:
                value = resource.RLIM_INFINITY if value >= (1 << 64) - 1 else value
                resource.setrlimit(res, (value, value))
        except (OSError, ValueError) as e:
            raise SetupError(step, getattr(e, "errno", None) or 22, str(e))
        try:
            os.chdir("/workspace")
        except OSError as e:
            raise SetupError("chdir workspace", e.errno, str(e))
        for cap in range(int(self.config["last_cap"]) + 1):
            if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:
                check(-1, "drop capabilities")
        if libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 and \
                ctypes.get_errno() != 22:
            check(-1, "drop capabilities")
        ident = int(self.config["sandbox_id"])
        try:
            os.setgroups([])
            os.setresgid(ident, ident, ident)
            os.setresuid(ident, ident, ident)
        except OSError as e:
            raise SetupError("set ids", e.errno, str(e))
        # An id change clears the parent-death signal; re-armed at once.
        check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "set ids")
        header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        data = ctypes.create_string_buffer(24)  # two empty {effective, permitted, inheritable}
        check(libc.syscall(SYS_capset, ctypes.c_char_p(header), data), "drop capabilities")
        check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")

    @staticmethod
    def clean_fds(channel):
        try:
            null = os.open("/dev/null", os.O_RDWR)
            for fd in (0, 1, 2):
                if fd != null:
                    os.dup2(null, fd)
            if null > 2:
                os.close(null)
            if channel <= 2:
                raise SetupError("close fds", 9, "the session socket is a standard fd")
            os.closerange(3, channel)
            os.closerange(channel + 1, 1 << 20)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
        except OSError as e:
            raise SetupError("close fds", e.errno, str(e))

    def install_seccomp(self):
        program = ctypes.create_string_buffer(self.seccomp, len(self.seccomp))

        class SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        fprog = SockFprog(len(self.seccomp) // 8, ctypes.addressof(program))
        rc = libc.syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
                          ctypes.byref(fprog))
        if rc > 0:
            raise SetupError("seccomp", 16, "TSYNC could not synchronize thread %d" % rc)
        check(rc, "seccomp")


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


def first_executions(code):
    """For zygote_prefault.learn's fork: a session's driver (prepare) and its first requests,
    an empty cell, then `code`. The empty cell writes what every first execution writes (the
    driver's own objects), so those pages are taken first."""
    session = []

    def prepare():
        # The cell files go to a tmpfs of this throwaway fork, not to the zygote's /tmp.
        check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        mount(None, "/", None, MS_REC | MS_PRIVATE, None, "mount private")
        mount("tmpfs", SCRATCH, "tmpfs", SAFE | MS_NOEXEC, "size=16m,mode=0700", "mount scratch")
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
    warm_up(config.get("warmup", ""))
    # Everything alive now moves to the permanent generation: a session's collections then
    # never walk (and so never copy) the zygote's objects.
    gc.collect()
    gc.freeze()
    prefault_code = config.get("prefault", "")
    budget = int(config.get("prefault_budget_pages", 0))
    prefault_ranges = (zygote_prefault.learn(*first_executions(prefault_code), budget)
                       if prefault_code and budget > 0 else [])
    threads = len(os.listdir("/proc/self/task"))
    zygote = Zygote(control, config, prefault_ranges)
    session_driver.write_frame(control.fileno(), json.dumps(
        {"op": "ready", "threads": threads, "python_threads": threading.active_count(),
         "prefault_pages": sum(n for _, n in prefault_ranges) // zygote_prefault.PAGE}).encode())
    if threads != 1:
        sys.stderr.write("sbx zygote: %d threads after the imports; refusing to fork\n" % threads)
        return 3
    return zygote.serve()


if __name__ == "__main__":
    sys.exit(main())
