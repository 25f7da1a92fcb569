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
  - every function `sbx run` executes in the runner (callgrind, exact, over two runs: the
    default policy with and without a workspace);
  - all code of the child's objects (libsbx_child_steps.a and the child's part of
    libsbx_sandbox.a), which run in namespaces callgrind cannot follow, and every function
    those objects call directly.
  - then, until a run faults on no code outside it (at most a few rounds): each function
    whose first touch still faults in a window of .text, found by relinking and tracing the
    page faults of real runs (perf). These are what the first two miss: the runner's code
    after a successful child (under valgrind the child fails, which lacks openat2) and the
    library functions the child reaches indirectly.
Input sections are named by archive member and section (`*libc.a:malloc.o(.text)`); sbx's
own code is compiled with -ffunction-sections (CMakeLists.txt), one section a function, while
glibc's archive members hold a few functions each. A pattern that matches nothing (a renamed function or object) is ignored by the linker: a stale
script costs page faults, never correctness. tests/integration/hot_path_test.cc fails when
the script no longer gathers the launch path.

Regenerate after changes to the launch path: tools/hot_path/generate.py (needs valgrind, perf,
root, the image and a build whose link wrote build/sbx.map, which src/cli/CMakeLists.txt asks
for; it relinks build/sbx as it goes).
"""
import argparse
import bisect
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The child's code, whole: it runs between clone and execve, and as the sandbox's init.
CHILD_ARCHIVES = ["libsbx_child_steps.a"]
CHILD_OBJECTS = ["child_main.cc.o", "init.cc.o", "process_tree.cc.o", "child_wait.cc.o"]


def run(argv, **kwargs):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kwargs).stdout


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


def function_addresses(binary):
    addresses = {}
    for line in run(["nm", "--defined-only", str(binary)]).splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "tTwWiI":
            addresses.setdefault(fields[2], int(fields[0], 16))
    return addresses


def code_faults_outside(sbx, map_path, image, workdir):
    """Addresses (link-time) of code page faults that fell outside .text.hot_path in real runs."""
    segments = [line.split() for line in run(["readelf", "-lW", str(sbx)]).splitlines()]
    text = next(f for f in segments if f and f[0] == "LOAD" and f[-3:-1] == ["R", "E"])
    text_offset, text_vaddr = int(text[1], 16), int(text[2], 16)
    hot = re.search(r"^\.text\.hot_path\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)", map_path.read_text(), re.M)
    hot_start, hot_end = (int(hot.group(1), 16), int(hot.group(1), 16) + int(hot.group(2), 16)) if hot else (0, 0)
    data = pathlib.Path(workdir) / "faults.data"
    workspace = pathlib.Path(workdir) / "faults-workspace"
    workspace.mkdir(exist_ok=True)
    script = (f"{sbx} run --image {image} -- /bin/true; "
              f"{sbx} run --image {image} --workspace {workspace} -- python3 -c pass")
    subprocess.run(["perf", "record", "-q", "-o", str(data), "-e", "exceptions:page_fault_user",
                    "--", "sh", "-c", script], check=True, capture_output=True)
    events = run(["perf", "script", "-i", str(data), "--show-mmap-events", "-F", "pid,event,trace"])
    bases, found = {}, []
    for line in events.splitlines():
        mapping = re.search(r"PERF_RECORD_MMAP2 (\d+)/\d+: \[0x([0-9a-f]+)\(0x[0-9a-f]+\) @ 0x([0-9a-f]+) .* r-xp (\S+)$", line)
        if mapping and mapping.group(4) == str(sbx):
            pid, start, offset = int(mapping.group(1)), int(mapping.group(2), 16), int(mapping.group(3), 16)
            bases[pid] = start - offset + text_offset - text_vaddr
            continue
        fault = re.match(r"\s*(\d+)\s+exceptions:page_fault_user: address=0x([0-9a-f]+) ip=0x([0-9a-f]+) error_code=0x([0-9a-f]+)", line)
        if not fault or not int(fault.group(4), 16) & 0x10:  # instruction fetches only
            continue
        pid = int(fault.group(1))
        base = bases.get(pid) or (next(iter(bases.values())) if len(bases) == 1 else None)
        if base is None:
            continue
        address = int(fault.group(2), 16) - base
        if not hot_start <= address < hot_end:
            found.append(address)
    return found


def executed_in_runner(sbx, image, workdir):
    """Mangled names of the functions `sbx run` executes (callgrind), the runner's and the
    child's until its failure."""
    workspace = pathlib.Path(workdir) / "workspace"
    workspace.mkdir()
    commands = [
        [str(sbx), "run", "--image", image, "--", "/bin/true"],
        [str(sbx), "run", "--image", image, "--workspace", str(workspace), "--", "python3", "-c", "pass"],
    ]
    names = []
    for i, command in enumerate(commands):
        # The child fails (exit 125) where valgrind lacks openat2; what ran until then counts.
        subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no",
                        f"--callgrind-out-file={workdir}/callgrind.{i}.%p", *command],
                       capture_output=True)
        for out in sorted(pathlib.Path(workdir).glob(f"callgrind.{i}.*")):
            for match in re.finditer(r"^c?fn=\(\d+\) (\S+)$", out.read_text(), re.M):
                if match.group(1) not in names:
                    names.append(match.group(1))
    if not names:
        sys.exit("generate: callgrind recorded no functions")
    return names


def called_by_child(build):
    """Symbols the child's objects call: each archive member's undefined symbols."""
    names = []
    archives = {"libsbx_child_steps.a": None, "libsbx_sandbox.a": CHILD_OBJECTS}
    for archive, members in archives.items():
        path = next(build.rglob(archive))
        member = None
        for line in run(["nm", "-u", str(path)]).splitlines():
            header = re.match(r"^(\S+\.o):$", line)
            if header:
                member = header.group(1)
                continue
            fields = line.split()
            if fields and (members is None or member in members) and fields[-1] not in names:
                names.append(fields[-1])
    return names


def pattern(obj):
    """The linker script's name for an input file: `*archive.a:member.o` or `*file.o`."""
    member = re.match(r"(?:.*/)?([^/(]+)\(([^)]+)\)$", obj)
    if member:
        return f"*{member.group(1)}:{member.group(2)}"
    return "*" + obj.split("/")[-1]


def is_child_object(obj):
    member = re.match(r"(?:.*/)?([^/(]+)\(([^)]+)\)$", obj)
    if not member:
        return False
    archive, name = member.groups()
    return archive in CHILD_ARCHIVES or (archive == "libsbx_sandbox.a" and name in CHILD_OBJECTS)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=str(ROOT / "build"), help="the build directory")
    parser.add_argument("--image", help="image directory (default: `sbx image path`)")
    parser.add_argument("--output", default=str(ROOT / "src" / "cli" / "hot_path.ld"))
    args = parser.parse_args()
    build = pathlib.Path(args.build)
    sbx, map_path = build / "sbx", build / "sbx.map"
    if not map_path.exists():
        sys.exit(f"generate: {map_path} is missing; build sbx first (its link writes the map)")
    image = args.image or run([str(sbx), "image", "path"]).strip()

    chosen, seen = [], set()

    def take(section):
        name, obj = section[2], section[3]
        # Cold parts stay where GCC put them. (Start-up code is hot here: a run is a process.)
        if name.startswith(".text.unlikely") or (name, obj) in seen:
            return False
        seen.add((name, obj))
        chosen.append((name, obj))
        return True

    def take_at(sections, starts, addresses):
        taken = 0
        for address in addresses:
            k = bisect.bisect_right(starts, address) - 1
            if k >= 0 and sections[k][0] <= address < sections[k][0] + sections[k][1]:
                taken += take(sections[k])
        return taken

    def write_script():
        with open(args.output, "w") as out:
            out.write("/* Generated by tools/hot_path/generate.py: the code `sbx run` executes, in one\n"
                      "   place (why, and how to regenerate: that script). */\n")
            out.write("SECTIONS\n{\n  .text.hot_path :\n  {\n")
            for name, obj in chosen:
                out.write(f"    {pattern(obj)}({name})\n")
            out.write("  }\n}\nINSERT BEFORE .text;\n")

    def relink():
        subprocess.run(["cmake", "--build", str(build), "--target", "sbx"], check=True, capture_output=True)
        sections = text_input_sections(map_path)
        return sections, [section[0] for section in sections]

    sections = text_input_sections(map_path)
    starts = [section[0] for section in sections]
    functions = function_addresses(sbx)
    with tempfile.TemporaryDirectory(prefix="sbx-hot-path-") as workdir:
        runner = executed_in_runner(sbx, image, workdir)
        take_at(sections, starts, [functions[name] for name in runner + called_by_child(build)
                                   if name in functions])
        for section in sections:
            if is_child_object(section[3]):
                take(section)
        for round_number in range(1, 9):
            write_script()
            sections, starts = relink()
            added = take_at(sections, starts, code_faults_outside(sbx, map_path, image, workdir))
            print(f"generate: round {round_number}: {added} more input sections")
            if added == 0:
                break
    write_script()
    sections, starts = relink()
    size = sum(s[1] for s in sections if (s[2], s[3]) in seen)
    print(f"generate: {len(chosen)} input sections, {size // 1024} KiB of code, in {args.output}")


if __name__ == "__main__":
    main()
