"""Approvals through the official Python SDK client (the `mcp` package,
Streamable HTTP): the elicitation callback approves, declines, and a
client without one is refused.

usage: python3 approvals.py http://127.0.0.1:PORT/mcp
"""

import asyncio
import sys

from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client

ARGS = {"role": "Software Engineer", "level": "senior"}


def text(result: types.CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def call(url: str, answer):
    """One session; `answer` is the elicitation result (None: no callback)."""
    asked = []

    async def on_elicit(context, params: types.ElicitRequestParams):
        asked.append(params.message)
        return answer

    callback = on_elicit if answer is not None else None
    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write, elicitation_callback=callback) as session:
            await session.initialize()
            result = await session.call_tool("get-compensation-info", ARGS)
            return result, asked


async def main(url: str) -> None:
    yes = types.ElicitResult(action="accept", content={"approve": True})
    result, asked = await call(url, yes)
    assert not result.isError, text(result)
    assert result.structuredContent, "structured salary band"
    assert len(asked) == 1 and "Software Engineer" in asked[0], asked
    print("ok - approved in the client: served")

    result, asked = await call(url, types.ElicitResult(action="decline"))
    assert result.isError and not result.structuredContent, result
    assert len(asked) == 1
    print("ok - declined: refused")

    result, asked = await call(url, None)
    assert result.isError and "confirm" in text(result), text(result)
    print("ok - no elicitation callback: refused, told why")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
