"""What a soak must not leave on the host: snapshots of processes, mounts, cgroups, network
namespaces, veths and sbx's temp dirs, and the differences between two snapshots that are leaks.

Other people's sbx runs may share the machine, so a leak is attributed: a process counts when it
is new since the baseline, looks like part of a sandbox (a soak marker in its command line,
sbx-init, sbx-netd, the pool's zygote, the session driver) and its nearest ancestor outside
the sandbox is where orphans go (pid 1 or an ancestor of the soak), not a live runner; cgroups
and workspaces carry their runner's pid in their names (`sbx-<pid>-<run>`, `ws-<pid>-XXXXXX`)
and count when that pid was one of the soak's runners and is gone or was reused since (pids
wrap: 10,000 runs go round a pid_max of 32768 several times).
"""
import os
import re
import subprocess

SANDBOX_NAMES = ("sbx-init", "sbx-netd", "zygote.py", "session_driver.py")
CGROUP_ROOT = "/sys/fs/cgroup"
CGROUP_NAME = re.compile(r"^sbx-(\d+)-")
WORKSPACE_NAME = re.compile(r"^ws-(\d+)-")


def _read(path, mode="r"):
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError:
        return None


def processes():
    """{pid: (ppid, state, comm, cmdline bytes)} for every process still there."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _read(f"/proc/{entry}/stat")
        cmdline = _read(f"/proc/{entry}/cmdline", "rb")
        if stat is None or cmdline is None:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        table[int(entry)] = (int(fields[1]), fields[0], comm, cmdline)
    return table


def live_with(marker, table=None):
    """Pids of live (not zombie) processes whose command line holds `marker` (bytes)."""
    table = processes() if table is None else table
    return [pid for pid, (_, state, _, cmd) in table.items() if marker in cmd and state != "Z"]


def _ancestors(pid, table):
    chain = []
    while pid in table and pid not in chain and pid > 0:
        chain.append(pid)
        pid = table[pid][0]
    return chain


def _orphaned(pid, table, markers_prefix):
    """True when the nearest ancestor that is not part of a sandbox is pid 1 or one of the
    soak's own ancestors (where a dead runner's children go), not a live runner (of anyone:
    other people's tests run sandboxes from their own binaries)."""
    mine = set(_ancestors(os.getpid(), table)) | {1}
    for ancestor in _ancestors(pid, table)[1:]:
        _, _, comm, cmd = table[ancestor]
        if not _is_sandbox_process(comm, cmd, markers_prefix):
            return ancestor in mine
    return True


def _started_after(path, pid):
    """True when process `pid` started after `path` was last changed: the pid was reused, and
    what is named after it belongs to whoever had it before."""
    stat = _read(f"/proc/{pid}/stat")
    boot = next((int(line.split()[1]) for line in (_read("/proc/stat") or "").splitlines()
                 if line.startswith("btime ")), None)
    if stat is None or boot is None:
        return False
    started = boot + int(stat[stat.rindex(")") + 2:].split()[19]) / os.sysconf("SC_CLK_TCK")
    try:
        return os.stat(path).st_mtime < started
    except OSError:
        return False


def _named_after_runners(found, runner_pids):
    """Cgroups or workspaces named after one of the soak's runners: the runner is gone, or its
    pid now belongs to a process that started after the directory last changed."""
    return [path for path, pid in found if pid in runner_pids
            and (not os.path.exists(f"/proc/{pid}") or _started_after(path, pid))]


def _is_sandbox_process(comm, cmdline, markers_prefix):
    """A sandbox's init, program or helper by its name, or a process carrying a soak marker."""
    argv = cmdline.split(b"\0")
    if any(arg.startswith(markers_prefix) for arg in argv):
        return True
    names = {comm} | {os.path.basename(a.decode(errors="replace")) for a in argv[:2]}
    return any(name in names for name in SANDBOX_NAMES)


def _sbx_cgroups():
    """(path, runner pid) of every cgroup named sbx-<pid>-... a few levels under each hierarchy."""
    found = []
    for top, dirs, _ in os.walk(CGROUP_ROOT):
        depth = top[len(CGROUP_ROOT):].count("/")
        match = CGROUP_NAME.match(os.path.basename(top))
        if match:
            found.append((top, int(match.group(1))))
            dirs[:] = []
        elif depth >= 4:
            dirs[:] = []
    return found


def state_directory():
    return "/var/tmp/sbx" if os.geteuid() == 0 else f"/tmp/sbx-{os.geteuid()}"


def _workspaces():
    base = state_directory()
    try:
        names = os.listdir(base)
    except OSError:
        return []
    return [(os.path.join(base, n), int(m.group(1))) for n in names
            if (m := WORKSPACE_NAME.match(n))]


def _lines(argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return set(done.stdout.splitlines()) if done.returncode == 0 else None


def snapshot():
    """The host's state as the leak checks compare it."""
    mounts = _read("/proc/self/mountinfo") or ""
    veths = _lines(["ip", "-o", "link", "show", "type", "veth"])
    return {
        "pids": set(processes()),
        "mounts": {line.split(" - ")[0].split(" ", 4)[4] + " " + line.split(" - ")[1]
                   for line in mounts.splitlines()
                   if "sbx" in line or " nsfs " in line},
        "netns": _lines(["ip", "netns", "list"]),
        "veths": None if veths is None else {v.split(":")[1].strip() for v in veths},
        "tmp": {n for n in os.listdir("/tmp") if n.startswith("sbx-")},
        "cgroups": {path for path, _ in _sbx_cgroups()},
        "net_inodes": set(_net_namespaces(processes(), b"\0")),
    }


def leaks(baseline, runner_pids, markers_prefix):
    """({check: [what sbx left]}, {check: [new on the host, not attributable]}, [stale cgroups
    of runners not ours]); an empty list is a pass."""
    now = snapshot()
    table = processes()
    orphans = []
    for pid, (ppid, state, comm, cmd) in table.items():
        if pid in baseline["pids"] or state == "Z":
            continue
        if _is_sandbox_process(comm, cmd, markers_prefix) and _orphaned(pid, table, markers_prefix):
            orphans.append(f"pid {pid} (parent {ppid}, {comm}): "
                           + cmd.replace(b"\0", b" ").decode(errors="replace")[:120])
    held = _net_namespaces(table, markers_prefix)
    new_tmp = sorted(now["tmp"] - baseline["tmp"])
    result = {
        "network namespaces held by sbx's processes or mounts":
            sorted(f"net:[{inode}] {', '.join(holders)}" for inode, (holders, ours) in held.items()
                   if ours and inode not in baseline["net_inodes"]),
        "processes (sandboxes, sbx-init, zygote, markers)":
            [o for o in orphans if "sbx-netd" not in o],
        "sbx-netd": [o for o in orphans if "sbx-netd" in o],
        "cgroups (sbx-<runner>-*)": _named_after_runners(_sbx_cgroups(), runner_pids),
        "workspaces (ws-<runner>-*)": _named_after_runners(_workspaces(), runner_pids),
    }
    # sbx names no namespace and creates no veth: a new one is another tool's on a shared host
    # (--shared-host makes these notes), and a leak on a host where only the soak runs; so are
    # new /tmp/sbx-* entries, which carry no runner pid (another run's audit log, a test's dir;
    # the soak writes its own audit logs in its own directory).
    host = {"temp dirs (/tmp/sbx-*)": new_tmp}
    for key, label in (("netns", "named network namespaces"), ("veths", "veths")):
        if now[key] is None or baseline[key] is None:
            host[label] = ["cannot list (ip failed)"]
        else:
            host[label] = sorted(now[key] - baseline[key])
    new_mounts = sorted(now["mounts"] - baseline["mounts"])
    result["mounts (sbx's)"] = [m for m in new_mounts if "sbx" in m]
    host["mounts (nsfs, not sbx's)"] = [m for m in new_mounts if "sbx" not in m]
    foreign = [path for path, pid in _sbx_cgroups()
               if pid not in runner_pids and not os.path.exists(f"/proc/{pid}")
               and path not in baseline["cgroups"]]
    return result, host, foreign


def _net_namespaces(table, markers_prefix):
    """{inode: ([holders], held by sbx)}: every net namespace a process is in or holds an fd
    to, or a mount pins; the soak's own (the host's) is left out."""
    host_ns = os.readlink("/proc/self/ns/net")
    held = {}

    def add(link, holder, ours):
        if link and link.startswith("net:[") and link != host_ns:
            holders, was_ours = held.setdefault(link[5:-1], ([], False))
            holders.append(holder)
            held[link[5:-1]] = (holders, was_ours or ours)

    for pid, (_, state, comm, cmd) in table.items():
        ours = _is_sandbox_process(comm, cmd, markers_prefix) and _orphaned(pid, table,
                                                                            markers_prefix)
        try:
            add(os.readlink(f"/proc/{pid}/ns/net"), f"pid {pid} ({comm})", ours)
            for fd in os.listdir(f"/proc/{pid}/fd"):
                add(_readlink(f"/proc/{pid}/fd/{fd}"), f"fd {fd} of pid {pid} ({comm})", ours)
        except OSError:
            continue
    for line in (_read("/proc/self/mountinfo") or "").splitlines():
        fields = line.split()
        if " - nsfs " in line and fields[3].startswith("net:["):
            add(fields[3], "mount " + fields[4], "sbx" in fields[4])
    return held


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def usage(pid):
    """(open fds, RSS in KiB) of a process."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    status = _read(f"/proc/{pid}/status") or ""
    rss = next((int(line.split()[1]) for line in status.splitlines()
                if line.startswith("VmRSS:")), -1)
    return fds, rss
