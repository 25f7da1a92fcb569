// The sandbox's pid 1: reaps orphans, forwards the parent's stop request, and ends the whole
// pid namespace when the program exits.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace sbx {

// Runs as pid 1 of the sandbox's pid namespace after forking the program (`program_pid`).
//  - SIGCHLD: reaps every child; when `program_pid` ends, sends SIGKILL to every process left
//    in the namespace (daemons, double forks, background jobs), reaps them, reports the wait
//    status of the program over `sync_fd` and exits.
//  - SIGTERM (sent by the parent at the timeout): SIGCONT then SIGTERM to every process, so
//    stopped ones can act on it; the parent sends SIGKILL after a grace period.
//  - the parent's end of `sync_fd` closing (runner killed): SIGKILL to everything, exit.
// `report_flags` go into the final report (kReportRootMoved). Never returns. kill(-1) is only
// ever sent when getpid() == 1, i.e. inside the namespace.
[[noreturn]] void RunInitInChild(int sync_fd, pid_t program_pid, int signal_fd, uint32_t report_flags);

// The init of an outer-isolation run (Isolation::kOuter): no pid namespace, so it is a child
// subreaper (double-forked daemons become its children) and ends the program's whole tree by
// walking /proc (SignalDescendants), never by kill(-1):
//  - the program's end: SIGKILL to every descendant, repeated and reaped until none is left
//    (ECHILD), then the report, as above, and exit;
//  - SIGTERM/SIGINT/SIGHUP (the timeout): SIGCONT then SIGTERM to every descendant;
//  - `sync_fd` readable or hung up (the parent's stop, or the runner gone): the same kill, then
//    exit without a report.
// It must never be SIGKILLed before that: its death would orphan the tree to the container's
// pid 1.
[[noreturn]] void RunOuterInitInChild(int sync_fd, pid_t program_pid, int signal_fd);

// Blocks the signals the init handles and returns a signalfd for them, or -errno. Called
// before spawning the program so no SIGCHLD is lost; the program starts with none blocked.
int BlockInitSignals();

}  // namespace sbx
