#!/usr/bin/env python3
"""Runs the CI recipes in deploy/ci/ as their runners would, under podman, on this host.

  ci_recipes.py IMAGE SECCOMP_PROFILE BUILD_DIR

Each container job is reproduced from its own YAML/TOML: the job's options translated to podman
(see TRANSLATION), plus what the runner itself adds, and its script steps run in that container
the way the runner runs them. Each container job runs a second time with its security options
left out, and must then fail: that shows the options are what makes it pass. GitHub's
runner-host job runs its sbx steps on this host. Prints one line per job; exits 1 if any job
did not end as expected. Needs root, podman with runc, python3-yaml, the image from
tools/container/build.sh and the Python image in /var/cache/sbx/images.
"""
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import tomllib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECIPES = ROOT / "deploy/ci"
IMAGES = "/var/cache/sbx/images"
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
# How each docker option the recipes use reaches podman 4.3 (the rest pass through unchanged):
#   --privileged, -v, --tmpfs, apparmor=unconfined  the same (this host has no AppArmor, so the
#                                                   AppArmor half is not exercised)
#   systempaths=unconfined   the same: podman accepts Docker's spelling (also unmask=ALL)
#   seccomp=PATH             the profile generated from podman's default (the recipe's path
#                            names one generated from Docker's default on the runner host)
#   GitLab's "key:value"     "key=value" (the Engine API takes both; podman only "=")
SECURITY_FLAGS = ("--privileged", "--security-opt")
# Steps of the runner-host job that need GitHub's VM: docker, and actions/checkout.
HOST_ONLY_STEPS = {"Install sbx from its image": "docker cp from the image (binaries in PATH)"}


def translate(args, seccomp):
    out = []
    for arg in args:
        if arg.startswith("seccomp=") and arg != "seccomp=unconfined":
            arg = "seccomp=" + seccomp
        out.append(arg)
    return out


def without_security(args):
    """The options less --privileged and every --security-opt: the runtime's defaults."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--security-opt":
            skip = True
        elif arg not in SECURITY_FLAGS:
            out.append(arg)
    return out


def run(argv, log, **kwargs):
    """Runs argv in its own session with output to log; kills what it left behind."""
    with open(log, "ab") as out:
        out.write(("$ " + shlex.join(argv) + "\n").encode())
        out.flush()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, **kwargs)
        status = proc.wait()
    try:
        os.killpg(proc.pid, signal.SIGTERM)  # a step's background `sbx serve`
    except ProcessLookupError:
        pass
    return status


def run_in_container(name, image, options, runner_args, command, steps, log):
    """Creates the container as the runner does, then runs each step in it; 0 when all pass.
    Without steps, the container's command is the job: GitLab's shape."""
    cid = f"sbx-ci-{name}-{os.getpid()}"
    body = ["--name", cid] + runner_args + options + [image] + command
    if not steps:
        return run(PODMAN + ["run", "--rm"] + body, log)
    status = run(PODMAN + ["create"] + body, log)
    if status == 0:
        status = run(PODMAN + ["start", cid], log)
    for step_name, script in steps:
        if status != 0:
            break
        with open(log, "a") as out:
            out.write(f"-- step: {step_name}\n")
        status = run(PODMAN + ["exec", cid, "sh", "-e", "-c", script], log)
    run(PODMAN + ["rm", "-f", "-t", "0", cid], log)  # tail as pid 1 ignores SIGTERM
    return status


def github_jobs(workflow, seccomp, work):
    """(name, options, runner args, command, steps) for each job with a `container`."""
    for job_name, job in workflow["jobs"].items():
        container = job.get("container")
        if not container:
            continue
        options = translate(shlex.split(container.get("options", "")), seccomp)
        # The runner's own additions to `docker create` (actions/runner DockerCommandManager):
        # the workspace at /__w, CI variables, and `tail -f /dev/null` as the entrypoint.
        runner_args = ["--workdir", "/__w/repo/repo", "-v", f"{work}:/__w", "-e", "CI=true",
                       "-e", "GITHUB_ACTIONS=true", "--entrypoint", "tail"]
        if IMAGES not in container.get("options", ""):
            # The GitHub-hosted jobs expect the Python image inside SBX_IMAGE; bound here.
            runner_args += ["-v", f"{IMAGES}:{IMAGES}:ro"]
        steps = [(s.get("name", "?"), s["run"]) for s in job["steps"] if "run" in s]
        yield f"github {job_name}", options, runner_args, ["-f", "/dev/null"], steps


def gitlab_jobs(pipeline, config, seccomp, work):
    """The same for each job of the pipeline on each Docker-executor runner in config.toml."""
    for runner in config["runners"]:
        if runner["executor"] != "docker":
            continue  # the Kubernetes executor's entry is not reproduced here
        docker = runner["docker"]
        options = ["--privileged"] if docker.get("privileged") else []
        for opt in docker.get("security_opt", []):
            options += ["--security-opt", opt.replace(":", "=", 1)]
        for volume in docker.get("volumes", []):
            options += ["-v", volume]  # a bare path is an anonymous volume, as in Docker
        options = translate(options, seccomp)
        for job_name, job in pipeline.items():
            if not isinstance(job, dict) or "script" not in job:
                continue
            # The runner clones into /builds and feeds the job's script lines to one shell in
            # the build container (the job's `entrypoint: [""]` leaves the image's unused).
            runner_args = ["--workdir", "/builds/project", "-v", f"{work}:/builds",
                           "-e", "CI=true", "-e", "GITLAB_CI=true", "--entrypoint", ""]
            command = ["sh", "-e", "-c", "\n".join(job["script"])]
            yield f"gitlab {runner['name']} {job_name}", options, runner_args, command, []


def run_host_job(job, build, work, log):
    """The runner-host job's steps on this host, as root (`sudo` is a pass-through here)."""
    shims = work / "shims"
    shims.mkdir()
    (shims / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    (shims / "sudo").chmod(0o755)
    (work / "sbx-src").symlink_to(ROOT)  # actions/checkout of $SBX_REPOSITORY
    env = dict(os.environ, PATH=f"{shims}:{build}:{os.environ['PATH']}", RUNNER_TEMP=str(work))
    for step in job["steps"]:
        name = step.get("name", step.get("uses", "?"))
        if "run" not in step or name in HOST_ONLY_STEPS:
            with open(log, "a") as out:
                out.write(f"-- not run: {name}: {HOST_ONLY_STEPS.get(name, 'checkout')}\n")
            continue
        with open(log, "a") as out:
            out.write(f"-- step: {name}\n")
        # GitHub's default shell for run steps on Linux hosts.
        status = run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                     log, env=env, cwd=work)
        if status != 0:
            return status
    return 0


def main():
    image, seccomp, build = sys.argv[1:4]
    workflow = yaml.safe_load((RECIPES / "github-actions.yml").read_text())
    pipeline = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text())
    config = tomllib.loads((RECIPES / "gitlab-runner-config.toml").read_text())
    logs = pathlib.Path(tempfile.mkdtemp(prefix="sbx-ci-recipes."))
    failures = 0

    def report(label, ok, detail, log):
        nonlocal failures
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {label}: {detail}")
        if not ok:
            print(pathlib.Path(log).read_text()[-4000:])

    workspace = logs / "workspace"  # the runners' checkout directory
    workspace.mkdir()
    container_jobs = list(github_jobs(workflow, seccomp, workspace)) + \
        list(gitlab_jobs(pipeline, config, seccomp, workspace))
    for index, (label, options, runner_args, command, steps) in enumerate(container_jobs):
        log = logs / f"job{index}.log"
        status = run_in_container(f"{index}", image, options, runner_args, command, steps, log)
        report(label, status == 0, f"podman {shlex.join(options)}: exit {status}", log)
        bare = without_security(options)
        log = logs / f"job{index}-defaults.log"
        status = run_in_container(f"{index}d", image, bare, runner_args, command, steps, log)
        # Refused by sbx itself, naming the blocker and its fix: not a broken container.
        named = "fix: " in log.read_text()
        report(label + " without its security options", status != 0 and named,
               f"exit {status}, {'a' if named else 'no'} fix named (must fail, naming it)", log)

    host = logs / "host"
    host.mkdir()
    log = logs / "runner-host.log"
    status = run_host_job(workflow["jobs"]["runner-host"], build, host, log)
    report("github runner-host", status == 0, f"on this host: exit {status}", log)
    if failures:
        print(f"logs in {logs}")
        return 1
    shutil.rmtree(logs, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
