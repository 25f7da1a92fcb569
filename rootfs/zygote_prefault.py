"""Learns which of the zygote's pages a session's first execution writes, and copies them early.

Installed in the image as /usr/lib/sbx/zygote_prefault.py, beside zygote.py. A forked session
shares the zygote's memory copy-on-write. Its first execution writes to about 1,900 of those
pages (reference counts of every object it touches, the allocator's free lists), and each
first write is a page fault that copies the page. A second execution in the same session takes
none. Where page faults are dear (a guest under shadow paging: 25-40 us each), copying the same
pages in one madvise(MADV_POPULATE_WRITE) costs about a third of that per page, because the
faults' own entries and exits are what cost most (docs/performance.md).

  learn(prepare, runs, budgets)
                    in the zygote, once: forks a throwaway child that calls prepare(), then
                    each of runs() in turn (the zygote's stand-ins for a first execution: an
                    empty cell, then a typical one) and reports, from /proc/self/pagemap, the
                    zygote pages each made the child's own copy of; returns them as one list of
                    (address, length) ranges per budget in `budgets` (pages), the earlier runs'
                    first: the first budget gets the pages every first execution writes (the
                    driver's own) before those only the typical one does, the next budget the
                    pages the first one had no room for, and so on.
  pack(ranges)      the ranges as the session library's sbx_prefault takes them: one call
                    breaks the sharing of all of them (MADV_POPULATE_WRITE).

A session copies the first list while it is prepared, so the pages are ready before it is
handed out; every such page is private memory an idle session holds, so that budget is small.
It copies the second list when its first execution arrives, before the cell runs: no longer
ahead of time, but in one batch instead of a fault each, and only in a session that is used.
Pages past both budgets are copied by the first execution as before, each by its own fault.

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


def _present_pages(mappings):
    """Page numbers in `mappings` that are present: (mapped by this process alone, shared)."""
    own, shared = set(), set()
    with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
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
    every budget filled before the next, no page in two sets."""
    in_order = []
    for pages in written_by_run:
        in_order.extend(sorted(pages - set(in_order)))
    chosen, start = [], 0
    for budget in budgets:
        chosen.append(set(in_order[start:start + budget]))
        start += budget
    return chosen


def _probe(report_fd, prepare, runs, budgets):
    prepare()
    mappings = _writable_private_mappings()
    own, shared = _present_pages(mappings)
    written_by_run = []
    for run in runs:
        run()
        now, _ = _present_pages(mappings)
        # Only copies of pages the zygote has: a page it never touched would be a fresh
        # allocation in a session (under transparent huge pages, maybe a whole 2 MiB one).
        written_by_run.append((now - own) & shared)
        own = now
    data = b""
    for chosen in _within_budgets(written_by_run, budgets):
        ranges = _runs(chosen)
        data += struct.pack("<Q", len(ranges)) + b"".join(struct.pack("<QQ", *r) for r in ranges)
    view = memoryview(data)
    while view:
        view = view[os.write(report_fd, view):]


def learn(prepare, runs, budgets):
    """The zygote pages that runs() write in a fresh fork: a list of ranges per budget (pages);
    every list empty on failure."""
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
        return [[] for _ in budgets]
    return _parse_report(b"".join(chunks), len(budgets))


def _parse_report(data, lists):
    """The probe's report: per list, a count and that many (address, length) pairs."""
    result, offset = [], 0
    for _ in range(lists):
        (count,) = struct.unpack_from("<Q", data, offset)
        offset += 8
        result.append([struct.unpack_from("<QQ", data, offset + 16 * i) for i in range(count)])
        offset += 16 * count
    return result


def pack(ranges):
    """(array, count): `ranges` as one flat C array of {address, length}, made once in the
    zygote so that a session's pre-fault is a single call (sbx_prefault)."""
    flat = [value for pair in ranges for value in pair]
    return (ctypes.c_ulonglong * max(len(flat), 1))(*flat), len(ranges)
