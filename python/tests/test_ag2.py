"""sbx.ag2.SbxCodeExecutor against the real server: AutoGen's seed task, files, restart."""

from __future__ import annotations

import inspect
import os

import pytest

import sbx
from sbx._localfiles import safe_parts, write_under
from sbx.ag2 import CodeBlock, CommandLineCodeResult, SbxCodeExecutor

PRIMES = """
primes, n = [], 2
while len(primes) < 10:
    if all(n % p for p in primes):
        primes.append(n)
    n += 1
with open("primes.txt", "w") as out:
    out.write("\\n".join(map(str, primes)) + "\\n")
print("wrote", len(primes))
"""
PRIMES_TEXT = b"2\n3\n5\n7\n11\n13\n17\n19\n23\n29\n"


@pytest.fixture
def executor(client):
    with SbxCodeExecutor(client=client) as executor:
        yield executor


def test_signatures_match_ag2():
    assert list(inspect.signature(SbxCodeExecutor).parameters) == [
        "work_dir", "timeout", "policy", "client"]
    assert list(inspect.signature(SbxCodeExecutor.execute_code_blocks).parameters) == [
        "self", "code_blocks"]
    assert isinstance(SbxCodeExecutor.code_extractor, property)
    result = CommandLineCodeResult(exit_code=0, output="", code_file=None)
    assert (result.exit_code, result.output, result.code_file) == (0, "", None)


def test_seed_task_prints_1024(executor):
    result = executor.execute_code_blocks([CodeBlock(code="print(2**10)", language="python")])
    assert isinstance(result, CommandLineCodeResult)
    assert result.exit_code == 0
    assert "1024" in result.output


def test_primes_file_stays_in_the_workspace(executor):
    result = executor.execute_code_blocks([CodeBlock(code=PRIMES, language="python")])
    assert result.exit_code == 0, result.output
    assert executor.session.read_file("primes.txt") == PRIMES_TEXT


def test_changed_files_are_copied_to_work_dir(client, tmp_path):
    with SbxCodeExecutor(work_dir=str(tmp_path), client=client) as executor:
        executor.execute_code_blocks([CodeBlock(code=PRIMES, language="python")])
        executor.execute_code_blocks([CodeBlock(code="mkdir -p d && echo hi > d/x", language="sh")])
    assert (tmp_path / "primes.txt").read_bytes() == PRIMES_TEXT
    assert (tmp_path / "d" / "x").read_bytes() == b"hi\n"


def test_copy_out_never_follows_a_symlink_in_work_dir(client, tmp_path):
    work_dir, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work_dir.mkdir()
    elsewhere.mkdir()
    (work_dir / "d").symlink_to(elsewhere)
    (work_dir / "f.txt").symlink_to(elsewhere / "target.txt")
    code = "import os\nos.makedirs('d', exist_ok=True)\nopen('d/x', 'w').write('x')\n" \
           "open('f.txt', 'w').write('y')"
    with SbxCodeExecutor(work_dir=str(work_dir), client=client) as executor:
        with pytest.warns(UserWarning):
            result = executor.execute_code_blocks([CodeBlock(code=code, language="python")])
    assert result.exit_code == 0
    assert os.listdir(elsewhere) == []


def test_write_under_refuses_paths_that_leave_the_directory(tmp_path):
    for path in ("../x", "/abs", "a/../b", "", "a//b", "nul\0"):
        with pytest.raises(ValueError):
            safe_parts(path)
    assert write_under(str(tmp_path), "a/b.txt", b"ok") == str(tmp_path / "a" / "b.txt")


def test_failure_exit_code_and_output(executor):
    result = executor.execute_code_blocks([CodeBlock(code="raise ValueError('boom')",
                                                     language="python")])
    assert result.exit_code != 0
    assert "boom" in result.output


def test_timeout_is_reported(client):
    with SbxCodeExecutor(timeout=1, client=client) as executor:
        result = executor.execute_code_blocks([CodeBlock(code="import time; time.sleep(30)",
                                                         language="python")])
    assert result.exit_code == 124
    assert "timed out" in result.output


def test_code_extractor_finds_python_and_shell_blocks(executor):
    message = ("Run this:\n```python\nprint('a')\n```\nthen\n```sh\necho b\n```\n"
               "and not\n```javascript\nconsole.log(1)\n```\n")
    blocks = executor.code_extractor.extract_code_blocks(message)
    assert [(b.language, b.code) for b in blocks] == [("python", "print('a')"), ("sh", "echo b")]
    result = executor.execute_code_blocks(blocks)
    assert result.exit_code == 0 and "a" in result.output and "b" in result.output


def test_restart_forgets_variables(executor):
    executor.execute_code_blocks([CodeBlock(code="z = 1", language="python")])
    executor.restart()
    result = executor.execute_code_blocks([CodeBlock(code="print(z)", language="python")])
    assert result.exit_code != 0 and "NameError" in result.output


def test_default_client_comes_from_sbx_url(server, monkeypatch):
    monkeypatch.setenv("SBX_URL", server.address)
    with SbxCodeExecutor() as executor:
        assert executor.execute_code_blocks([CodeBlock("print(1)", "python")]).exit_code == 0
    assert isinstance(executor._client, sbx.Client)


def test_result_fields_never_report_success_for_an_unfinished_execution():
    from sbx._adapter import result_fields
    from sbx.results import ExecuteResult

    assert result_fields(ExecuteResult(status="exited", exit_code=0, output="ok")) == (0, "ok")
    timed_out = result_fields(ExecuteResult(status="timed_out", exit_code=0, output=""))
    assert timed_out == (124, "\n[sbx: execution timed out]")
    assert result_fields(ExecuteResult(status="oom_killed", exit_code=0, output=""))[0] == 1
