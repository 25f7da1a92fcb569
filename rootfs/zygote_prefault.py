"""Learns which of the zygote's pages a session's first execution writes, and copies them early.

Installed in the image as /usr/lib/sbx/zygote_prefault.py, beside zygote.py. A forked session
shares the zygote's memory copy-on-write. Its first execution writes to about 1,900 of those
pages (reference counts of every object it touches, the allocator's free lists), and each
first write is a page fault that copies the page. A second execution in the same session takes
none. Where page faults are dear (a guest under shadow paging: 25-40 us each), copying the same
pages in one madvise(MADV_POPULATE_WRITE) costs about a third of that per page, because the
faults' own entries and exits are what cost most (docs/performance.md).

  learn(prepare, runs, budgets)
                    in the zygote, once: forks a throwaway child that calls prepare() (a
                    session's set-up, as far as a throwaway child can do it), then each of
                    runs() in turn (the zygote's stand-ins for a first execution: an empty cell,
                    then a typical one) and reports, from its own and the zygote's
                    /proc/PID/pagemap, the zygote pages the fork and each step made the child's
                    own copy of, as (address, length) ranges in three lists: the fork's and
                    prepare()'s (within the first budget), then the runs' within the rest of
                    the first budget (the empty cell's first: every first execution writes
                    those), then the runs' past it within the second budget.
  Fork(library)     os.fork with the session library's sbx_zygote_fork in its place: the child
                    copies the first list before CPython's after-fork callbacks run, which
                    alone copy ~240 of the zygote's pages.
  pack(ranges)      the ranges as the session library takes them: one call breaks the sharing
                    of all of them (MADV_POPULATE_WRITE).

A session copies the first list at its fork, the second once it is isolated, and the third
when its first execution arrives, before the cell runs. The first two are private memory an
idle session holds from the start (the first mostly pages its set-up copies anyway), so they
share the first budget; the third waits for a session that is used, and is copied in one
batch instead of a fault each. Pages past both budgets are copied by the first execution as
before, each by its own fault. The first list's copies are made before the host moves the
session into its own cgroup, so they are charged to the zygote's, as the set-up's own faults
always were.

The pre-fault writes no data: it only makes private copies a write would have made anyway, so
nothing of the learning child (which has ended) or of the zygote reaches a session that the
fork did not already give it. A range that no longer maps (freed since) is skipped.
"""

import ctypes
import os
import struct

PAGE = os.sysconf("SC_PAGE_SIZE")
PRESENT = 1 << 63
EXCLUSIVE = 1 << 56  # mapped by this process only: for an anonymous page, its own copy

def _writable_private_mappings():
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if fields[1][1] == "w" and fields[1][3] == "p":
                low, high = (int(x, 16) for x in fields[0].split("-"))
                ranges.append((low, high))
    return ranges


def _present_pages(mappings, process="self"):
    """Page numbers in `mappings` that are present in `process`: (mapped by it alone, shared)."""
    own, shared = set(), set()
    with open("/proc/%s/pagemap" % process, "rb", buffering=0) as pagemap:
        for low, high in mappings:
            first = low // PAGE
            pagemap.seek(first * 8)
            entries = pagemap.read((high - low) // PAGE * 8)
            for index, (entry,) in enumerate(struct.iter_unpack("<Q", entries)):
                if entry & PRESENT:
                    (own if entry & EXCLUSIVE else shared).add(first + index)
    return own, shared


def _runs(pages):
    ranges = []
    for page in sorted(pages):
        if ranges and ranges[-1][1] == page:
            ranges[-1][1] = page + 1
        else:
            ranges.append([page, page + 1])
    return [(low * PAGE, (high - low) * PAGE) for low, high in ranges]


def _within_budgets(written_by_run, budgets):
    """One set of pages per budget: the earlier runs' pages first, each run's in address order,
    every budget filled before the next. The runs' sets are disjoint (each holds only the pages
    its run copied), so no page is in two sets."""
    in_order = [page for pages in written_by_run for page in sorted(pages)]
    chosen, start = [], 0
    for budget in budgets:
        chosen.append(set(in_order[start:start + budget]))
        start += budget
    return chosen


def _probe(report_fd, prepare, runs, budgets):
    prepare()
    mappings = _writable_private_mappings()
    # The zygote waits for this report, so its pages stay as they were at the fork. Only copies
    # of pages it has count: a page it never touched would be a fresh allocation in a session
    # (under transparent huge pages, maybe a whole 2 MiB one).
    zygote_own, zygote_shared = _present_pages(mappings, os.getppid())
    zygote = zygote_own | zygote_shared
    own, _ = _present_pages(mappings)
    # What the fork (CPython's after-fork callbacks) and prepare() copied: a session's set-up.
    written_by_run = [own & zygote]
    for run in runs:
        run()
        now, _ = _present_pages(mappings)
        written_by_run.append((now - own) & zygote)
        own = now
    # The set-up's pages are of use only at the fork: by a first execution they are copied.
    prepared, first_execution = budgets
    (at_fork,) = _within_budgets(written_by_run[:1], [prepared])
    lists = [at_fork] + _within_budgets(written_by_run[1:], [prepared - len(at_fork), first_execution])
    data = b""
    for chosen in lists:
        ranges = _runs(chosen)
        data += struct.pack("<Q", len(ranges)) + b"".join(struct.pack("<QQ", *r) for r in ranges)
    view = memoryview(data)
    while view:
        view = view[os.write(report_fd, view):]


def learn(prepare, runs, budgets):
    """The zygote pages a fresh fork and then runs() write, within `budgets` (pages): those a
    session copies while it is prepared, those it copies at its first execution. Three lists of
    ranges: the fork's and prepare()'s own (copied at the fork, within the first budget), the
    rest of the first budget (the runs'), the second budget's; all empty on failure."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            _probe(write_end, prepare, runs, budgets)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    chunks = []
    while True:
        chunk = os.read(read_end, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return [], [], []
    return _parse_report(b"".join(chunks), 3)


def _parse_report(data, lists):
    """The probe's report: per list, a count and that many (address, length) pairs."""
    result, offset = [], 0
    for _ in range(lists):
        (count,) = struct.unpack_from("<Q", data, offset)
        offset += 8
        result.append([struct.unpack_from("<QQ", data, offset + 16 * i) for i in range(count)])
        offset += 16 * count
    return result


class Fork:
    """Forks as os.fork does (PyOS_BeforeFork, fork, PyOS_AfterFork_Child or _Parent, the GIL
    held throughout), with the session library's sbx_zygote_fork as the fork: the child copies
    `ranges` (packed) before the after-fork callbacks run."""

    def __init__(self, library_path):
        self.lib = ctypes.PyDLL(library_path)  # keeps the GIL across the call, as os.fork
        self.lib.sbx_zygote_fork.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t]
        self.lib.sbx_zygote_fork.restype = ctypes.c_int
        self.api = ctypes.pythonapi
        for name in ("PyOS_BeforeFork", "PyOS_AfterFork_Parent", "PyOS_AfterFork_Child"):
            getattr(self.api, name).argtypes = []
            getattr(self.api, name).restype = None

    def __call__(self, packed_ranges):
        self.api.PyOS_BeforeFork()
        pid = self.lib.sbx_zygote_fork(*packed_ranges)
        if pid == 0:
            self.api.PyOS_AfterFork_Child()
            return 0
        self.api.PyOS_AfterFork_Parent()
        if pid < 0:
            raise OSError(-pid, os.strerror(-pid))
        return pid


def pack(ranges):
    """(array, count): `ranges` as one flat C array of {address, length}, made once in the
    zygote so that a session's pre-fault is a single call (sbx_prefault)."""
    flat = [value for pair in ranges for value in pair]
    return (ctypes.c_ulonglong * max(len(flat), 1))(*flat), len(ranges)
