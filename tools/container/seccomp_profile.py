#!/usr/bin/env python3
"""Writes seccomp profiles for sbx in a container from a runtime's default profile.

  seccomp_profile.py sbx DEFAULT OUT      DEFAULT plus deploy/seccomp/sbx-additions.json
  seccomp_profile.py no-userns DEFAULT OUT  DEFAULT minus user namespaces (unshare, and clone
                                          with CLONE_NEWUSER, fail with EPERM; clone3 ENOSYS)

DEFAULT is the runtime's own profile (podman: /usr/share/containers/seccomp.json; Docker: its
profiles/seccomp/default.json), so the result is that runtime's default and only sbx's changes.
"""
import json
import pathlib
import sys

ADDITIONS = pathlib.Path(__file__).resolve().parents[2] / "deploy/seccomp/sbx-additions.json"
CLONE_NEWUSER = 0x10000000
EPERM, ENOSYS = 1, 38


def without(profile, names, actions=None):
    """Drops `names` from every rule (with one of `actions`, if given), and rules left empty."""
    rules = []
    for rule in profile["syscalls"]:
        if actions is not None and rule["action"] not in actions:
            rules.append(rule)
            continue
        kept = [name for name in rule["names"] if name not in names]
        if kept:
            rules.append(dict(rule, names=kept))
    profile["syscalls"] = rules


def add_sbx(profile):
    entries = json.loads(ADDITIONS.read_text())["syscalls"]
    # A denial of the same call (podman's default refuses sethostname without CAP_SYS_ADMIN)
    # would win over the allowance.
    without(profile, {entry["name"] for entry in entries}, {"SCMP_ACT_ERRNO", "SCMP_ACT_KILL"})
    for entry in entries:
        profile["syscalls"].append({"names": [entry["name"]], "action": "SCMP_ACT_ALLOW",
                                    "args": [], "comment": "sbx: " + entry["reason"]})


def deny_userns(profile):
    without(profile, {"unshare", "clone", "clone3"})
    newuser = {"index": 0, "value": CLONE_NEWUSER, "op": "SCMP_CMP_MASKED_EQ"}
    profile["syscalls"] += [
        {"names": ["unshare"], "action": "SCMP_ACT_ERRNO", "errnoRet": EPERM, "args": [],
         "comment": "no user namespaces: as a host that forbids them"},
        {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
         "args": [dict(newuser, valueTwo=0)], "comment": "clone without CLONE_NEWUSER"},
        {"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": EPERM,
         "args": [dict(newuser, valueTwo=CLONE_NEWUSER)], "comment": "clone with CLONE_NEWUSER"},
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS, "args": [],
         "comment": "flags are behind a pointer: callers fall back to clone"},
    ]


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("sbx", "no-userns"):
        sys.exit(__doc__)
    profile = json.loads(pathlib.Path(sys.argv[2]).read_text())
    (add_sbx if sys.argv[1] == "sbx" else deny_userns)(profile)
    pathlib.Path(sys.argv[3]).write_text(json.dumps(profile, indent=1) + "\n")


if __name__ == "__main__":
    main()
