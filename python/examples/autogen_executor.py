"""AutoGen 0.4: sbx as the code executor of a CodeExecutorAgent.

With AutoGen installed:
    async with SbxCodeExecutor() as executor:
        agent = CodeExecutorAgent("exec", code_executor=executor)
This example calls the executor as that agent does, so it runs without AutoGen:
    SBX_URL=unix:/run/sbx/sbx.sock python3 examples/autogen_executor.py
"""

import asyncio

from sbx.autogen import CancellationToken, CodeBlock, SbxCodeExecutor


async def main() -> None:
    async with SbxCodeExecutor(timeout=30) as executor:
        result = await executor.execute_code_blocks(
            [CodeBlock(code="print(2**10)", language="python")], CancellationToken()
        )
        print(f"exit_code={result.exit_code} output={result.output.strip()!r}")

        token = CancellationToken()
        asyncio.get_running_loop().call_later(0.5, token.cancel)
        slow = CodeBlock(code="import time; time.sleep(60)", language="python")
        cancelled = await executor.execute_code_blocks([slow], token)
        print(f"cancelled: exit_code={cancelled.exit_code} output={cancelled.output.strip()!r}")


asyncio.run(main())
