#!/usr/bin/env python3
"""Writes src/cli/hot_path.ld: the code `sbx run` executes, laid out together in sbx.

Why: each first touch of sbx's code is a page fault that maps one 64 KiB window of the file
(the kernel's fault-around). A run touches a few hundred functions scattered over 2.5 MB of
code, so it faults in most windows of it: the runner before its clone, and again the child,
whose fork shares no page-table entries of file mappings. Where page faults are slow (shadow
paging, TCG, some paravirtual hosts) that is a large share of a run's start; with the run's
code in one place it is a fraction (docs/performance.md).

How: the linker script has one output section, .text.hot_path, inserted before .text, which
takes the input sections that hold
  - every function `sbx run` executes under callgrind (two runs: the default policy with and
    without a workspace): the runner's, and the child's until it fails there (valgrind lacks
    openat2);
  - all code of the child's objects (libsbx_child_steps.a and the child's part of
    libsbx_sandbox.a), and every function those objects call directly;
  - then, round by round until no new one turns up (at most eight): each function whose first
    touch still faults in a window of .text, found by relinking and tracing the page faults of
    the same runs, natively (perf). These are what the first two miss: the runner's code after
    a child that succeeded, and the library functions the child reaches indirectly.
sbx's own code is compiled with -ffunction-sections (CMakeLists.txt), one section a function,
named in the script by section alone (`*(.text._ZN3sbx...)`): an inline function has a copy in
each object that uses it and the linker keeps one, whichever comes first. The libraries'
archive members (glibc's hold a few functions each) are named by member and section
(`*libc.a:malloc.o(.text)`). A pattern that matches nothing (a renamed function or object) is
ignored by the linker: a stale script costs page faults, never correctness.
tests/integration/hot_path_test.cc fails when the script no longer gathers the launch path.

Regenerate after changes to the launch path: tools/hot_path/generate.py (needs valgrind, perf,
root, the image and a build whose link wrote build/sbx.map, which src/cli/CMakeLists.txt asks
for; it relinks build/sbx as it goes).
"""
import argparse
import bisect
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "src" / "cli" / "hot_path.ld"
# The child's code, whole: it runs between clone and execve, and as the sandbox's init. Each
# archive with the members that are the child's (None: all of them).
CHILD_CODE = {"libsbx_child_steps.a": None,
              "libsbx_sandbox.a": ["child_main.cc.o", "init.cc.o", "process_tree.cc.o", "child_wait.cc.o"]}
MEMBER = re.compile(r"(?:.*/)?([^/(]+)\(([^)]+)\)$")  # "dir/libx.a(member.o)"


def run(argv):
    try:
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError as failed:
        sys.exit(f"generate: {' '.join(argv)} failed:\n{failed.stderr}")


def text_input_sections(map_path):
    """(start, size, section name, object) of each input section of the code's output sections
    (.text, and .text.hot_path where this script's last output was linked in)."""
    sections, pending, inside = [], None, False
    for line in map_path.read_text().splitlines():
        if re.match(r"^\S", line):
            inside = re.match(r"^\.text(\.hot_path)?(\s|$)", line) is not None
            continue
        if not inside:
            continue
        one_line = re.match(r"^ (\.\S+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$", line)
        if one_line:
            name, start, size, obj = one_line.groups()
            sections.append((int(start, 16), int(size, 16), name, obj))
            pending = None
            continue
        name_only = re.match(r"^ (\.\S+)$", line)
        if name_only:
            pending = name_only.group(1)
            continue
        rest = re.match(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$", line)
        if rest and pending:
            sections.append((int(rest.group(1), 16), int(rest.group(2), 16), pending, rest.group(3)))
            pending = None
    return sorted(sections)


def archive_paths(map_path):
    """Each archive the link used, by file name, resolved as the link saw it (from the map)."""
    link_dir = map_path.parent / "src" / "cli"
    paths = {}
    for match in re.finditer(r"^(\S+\.a)\(", map_path.read_text(), re.M):
        path = (link_dir / match.group(1)).resolve()
        paths.setdefault(path.name, path)
    return paths


def function_addresses(binary):
    addresses = {}
    for line in run(["nm", "--defined-only", str(binary)]).splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "tTwWiI":
            addresses.setdefault(fields[2], int(fields[0], 16))
    return addresses


def traced_runs(sbx, image, workdir):
    """The shell command of the runs traced: the default policy, with and without a workspace."""
    workspace = pathlib.Path(workdir) / "workspace"
    workspace.mkdir(exist_ok=True)
    return [[str(sbx), "run", "--image", image, "--", "/bin/true"],
            [str(sbx), "run", "--image", image, "--workspace", str(workspace), "--",
             "python3", "-c", "pass"]]


def code_faults_outside(sbx, map_path, image, workdir):
    """Link-time addresses of the code page faults of real runs that fell outside
    .text.hot_path, and how many faults on sbx's code were seen at all."""
    segments = [line.split() for line in run(["readelf", "-lW", str(sbx)]).splitlines()]
    text = next(f for f in segments if f and f[0] == "LOAD" and f[-3:-1] == ["R", "E"])
    text_offset, text_vaddr = int(text[1], 16), int(text[2], 16)
    hot = re.search(r"^\.text\.hot_path\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)", map_path.read_text(), re.M)
    hot_start = int(hot.group(1), 16) if hot else 0
    hot_end = hot_start + int(hot.group(2), 16) if hot else 0
    data = pathlib.Path(workdir) / "faults.data"
    script = "; ".join(" ".join(command) for command in traced_runs(sbx, image, workdir))
    run(["perf", "record", "-q", "-o", str(data), "-e", "exceptions:page_fault_user",
         "--", "sh", "-c", script])
    events = run(["perf", "script", "-i", str(data), "--show-mmap-events", "--show-task-events",
                  "-F", "pid,event,trace"])
    # pid -> (start, length, link-time address of start) of sbx's code mapping. A fork inherits
    # its parent's; an exec drops it (an exec of sbx maps it anew).
    mappings, outside, seen = {}, [], 0
    for line in events.splitlines():
        fork = re.search(r"PERF_RECORD_FORK\((\d+):\d+\):\((\d+):\d+\)", line)
        if fork:
            child, parent = int(fork.group(1)), int(fork.group(2))
            if parent in mappings:
                mappings[child] = mappings[parent]
            continue
        exec_comm = re.match(r"\s*(\d+) PERF_RECORD_COMM exec:", line)
        if exec_comm:
            mappings.pop(int(exec_comm.group(1)), None)
            continue
        mapping = re.search(r"PERF_RECORD_MMAP2 (\d+)/\d+: \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) "
                            r"@ 0x([0-9a-f]+) .* r-xp (\S+)$", line)
        if mapping:
            if mapping.group(5) == str(sbx):
                start, length, offset = (int(mapping.group(n), 16) for n in (2, 3, 4))
                mappings[int(mapping.group(1))] = (start, length, offset - text_offset + text_vaddr)
            continue
        fault = re.match(r"\s*(\d+)\s+exceptions:page_fault_user: address=0x([0-9a-f]+) "
                         r"ip=0x[0-9a-f]+ error_code=0x([0-9a-f]+)", line)
        if not fault or not int(fault.group(3), 16) & 0x10:  # instruction fetches only
            continue
        found = mappings.get(int(fault.group(1)))
        address = int(fault.group(2), 16)
        if found is None or not found[0] <= address < found[0] + found[1]:
            continue
        seen += 1
        linked = address - found[0] + found[2]
        if not hot_start <= linked < hot_end:
            outside.append(linked)
    return outside, seen


def executed(sbx, image, workdir):
    """Mangled names of the functions `sbx run` executes under callgrind: the runner's, and the
    child's until it fails (valgrind lacks openat2; the run exits 125, which is expected)."""
    names = []
    for i, command in enumerate(traced_runs(sbx, image, workdir)):
        subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no",
                        f"--callgrind-out-file={workdir}/callgrind.{i}.%p", *command],
                       capture_output=True)
        for out in sorted(pathlib.Path(workdir).glob(f"callgrind.{i}.*")):
            for match in re.finditer(r"^c?fn=\(\d+\) (\S+)$", out.read_text(), re.M):
                if match.group(1) not in names:
                    names.append(match.group(1))
    if not names:
        sys.exit("generate: callgrind recorded no functions (is valgrind installed?)")
    return names


def called_by_child(archives):
    """Symbols the child's objects call: each of their archive members' undefined symbols."""
    names = []
    for archive, members in CHILD_CODE.items():
        if archive not in archives:
            sys.exit(f"generate: the link map names no {archive}")
        member = None
        for line in run(["nm", "-u", str(archives[archive])]).splitlines():
            header = re.match(r"^(\S+\.o):$", line)
            if header:
                member = header.group(1)
                continue
            fields = line.split()
            if fields and (members is None or member in members) and fields[-1] not in names:
                names.append(fields[-1])
    return names


def pattern(name, obj):
    """The script's line for one input section (see the module's docstring)."""
    if name.startswith(".text._Z"):
        return f"*({name})"
    member = MEMBER.match(obj)
    if member:
        return f"*{member.group(1)}:{member.group(2)}({name})"
    return f"*{obj.split('/')[-1]}({name})"


def is_child_object(obj):
    member = MEMBER.match(obj)
    if not member:
        return False
    archive, name = member.groups()
    return archive in CHILD_CODE and (CHILD_CODE[archive] is None or name in CHILD_CODE[archive])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=str(ROOT / "build"), help="the build directory")
    parser.add_argument("--image", help="image directory (default: `sbx image path`)")
    args = parser.parse_args()
    build = pathlib.Path(args.build).resolve()
    sbx, map_path = build / "sbx", build / "sbx.map"
    if not map_path.exists():
        sys.exit(f"generate: {map_path} is missing; build sbx first (its link writes the map)")
    image = args.image or run([str(sbx), "image", "path"]).strip()
    original = SCRIPT.read_text()
    chosen, seen = [], set()

    def take(section):
        name, obj = section[2], section[3]
        key = pattern(name, obj)
        # Cold parts stay where GCC put them. (Start-up code is hot here: a run is a process.)
        if name.startswith(".text.unlikely") or key in seen:
            return False
        seen.add(key)
        chosen.append(key)
        return True

    def take_at(sections, starts, addresses):
        taken = 0
        for address in addresses:
            k = bisect.bisect_right(starts, address) - 1
            if k >= 0 and sections[k][0] <= address < sections[k][0] + sections[k][1]:
                taken += take(sections[k])
        return taken

    def write_script():
        SCRIPT.write_text(
            "/* Generated by tools/hot_path/generate.py: the code `sbx run` executes, in one\n"
            "   place (why, and how to regenerate: that script). */\n"
            "SECTIONS\n{\n  .text.hot_path :\n  {\n"
            + "".join(f"    {line}\n" for line in chosen)
            + "  }\n}\nINSERT BEFORE .text;\n")

    def relink():
        run(["cmake", "--build", str(build), "--target", "sbx"])
        sections = text_input_sections(map_path)
        return sections, [section[0] for section in sections]

    try:
        sections = text_input_sections(map_path)
        starts = [section[0] for section in sections]
        functions = function_addresses(sbx)
        with tempfile.TemporaryDirectory(prefix="sbx-hot-path-") as workdir:
            wanted = executed(sbx, image, workdir) + called_by_child(archive_paths(map_path))
            take_at(sections, starts, [functions[name] for name in wanted if name in functions])
            for section in sections:
                if is_child_object(section[3]):
                    take(section)
            for round_number in range(1, 9):
                write_script()
                sections, starts = relink()
                outside, seen_faults = code_faults_outside(sbx, map_path, image, workdir)
                if seen_faults == 0:
                    sys.exit("generate: perf saw no page faults on sbx's code; nothing to measure")
                added = take_at(sections, starts, outside)
                print(f"generate: round {round_number}: {seen_faults} code faults, "
                      f"{len(outside)} outside the section, {added} more input sections")
                if added == 0:
                    break
    except BaseException:
        SCRIPT.write_text(original)  # a half-made script never stays in the tree
        raise
    relink()
    hot = re.search(r"^\.text\.hot_path\s+0x[0-9a-f]+\s+0x([0-9a-f]+)", map_path.read_text(), re.M)
    print(f"generate: {len(chosen)} lines in {SCRIPT}, {int(hot.group(1), 16) // 1024} KiB of code")


if __name__ == "__main__":
    main()
