"""The examples run unchanged against the real server, found through $SBX_URL."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR

EXPECTED = {
    "ag2_executor.py": ["exit_code=0 output='1024 10'", "work_dir/primes.txt: 2 3 5 7 11 13"],
    "autogen_executor.py": ["exit_code=0 output='1024'", "cancelled: exit_code=1"],
    "openai_agents_sandbox.py": ["exit_code=0 stdout='20\\n1024\\n'", "answer.txt: 42"],
}


def test_every_example_is_tested():
    names = os.listdir(os.path.join(PYTHON_DIR, "examples"))
    assert sorted(n for n in names if n.endswith(".py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(server, name):
    env = dict(os.environ, SBX_URL=server.address, PYTHONPATH=PYTHON_DIR)
    done = subprocess.run([sys.executable, os.path.join(PYTHON_DIR, "examples", name)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for line in EXPECTED[name]:
        assert line in done.stdout, done.stdout
