"""OpenAI Agents SDK: sbx as a sandbox backend (``SbxSandboxClient``).

With the SDK installed, hand the client to the agent's sandbox configuration; this example
uses it directly, so it runs without the SDK:
    SBX_URL=unix:/run/sbx/sbx.sock python3 examples/openai_agents_sandbox.py
"""

import asyncio

from sbx.openai_agents import SbxSandboxClient, SbxSandboxClientOptions


async def main() -> None:
    client = SbxSandboxClient()
    session = await client.create(
        manifest={"notes.txt": "hello from the host\n"}, options=SbxSandboxClientOptions()
    )
    try:
        result = await session.exec("sh", "-lc", "wc -c < notes.txt; python3 -c 'print(2**10)'")
        print(f"exit_code={result.exit_code} stdout={result.stdout.decode()!r}")
        await session.write("answer.txt", b"42\n")
        print("answer.txt:", (await session.read("answer.txt")).read().decode().strip())
        snapshot = await session.persist_workspace()
        print("snapshot bytes:", len(snapshot.read()))
    finally:
        await client.delete(session)


asyncio.run(main())
