"""Python's MCP SDK (`mcp`) on patchloop's gateway: lists the tools, calls one, prints what it got as JSON.

Usage: mcp_gateway_client.py URL KEY TOOL INPUT
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main(url: str, key: str, tool: str, text: str) -> None:
    async with streamablehttp_client(url, headers={"Authorization": f"Bearer {key}"}) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool(tool, {"input": text})
            print(
                json.dumps(
                    {
                        "tools": [one.name for one in tools.tools],
                        "text": [part.text for part in result.content if part.type == "text"],
                        "is_error": result.isError,
                        "structured": result.structuredContent,
                    }
                )
            )


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
