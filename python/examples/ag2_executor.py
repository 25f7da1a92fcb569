"""AG2 / AutoGen 0.2: sbx as the executor of a code-running agent.

With AG2 installed, pass the executor to an agent:
    ConversableAgent("executor", llm_config=False,
                     code_execution_config={"executor": SbxCodeExecutor(work_dir="out")})
This example drives the executor the way that agent does, so it runs without AG2 or an LLM:
    SBX_URL=unix:/run/sbx/sbx.sock python3 examples/ag2_executor.py
"""

import tempfile

from sbx.ag2 import SbxCodeExecutor

REPLY = """Here is the code:
```python
primes = [n for n in range(2, 30) if all(n % d for d in range(2, n))]
open("primes.txt", "w").write(" ".join(map(str, primes)))
print(2**10, len(primes))
```
"""

with tempfile.TemporaryDirectory() as work_dir, SbxCodeExecutor(work_dir=work_dir) as executor:
    blocks = executor.code_extractor.extract_code_blocks(REPLY)
    result = executor.execute_code_blocks(blocks)
    print(f"exit_code={result.exit_code} output={result.output.strip()!r}")
    with open(f"{work_dir}/primes.txt") as primes:
        print("work_dir/primes.txt:", primes.read())
