"""A tiny MCP server written with Python's `mcp` package (FastMCP), over stdio, for test/e2e/mcp-servers.test.ts."""

from typing import TypedDict

from mcp.server.fastmcp import FastMCP

server = FastMCP("python-tools")


@server.tool(structured_output=False)
def multiply(a: float, b: float) -> float:
    """Multiplies two numbers."""
    return a * b


class Rectangle(TypedDict):
    width: float
    height: float
    area: float


@server.tool()
def rectangle(width: float, height: float) -> Rectangle:
    """Describes a rectangle: its sides and its area, as structured content."""
    return {"width": width, "height": height, "area": width * height}


if __name__ == "__main__":
    server.run("stdio")
