"""A tiny MCP server written with Python's `mcp` package (FastMCP), over stdio, for test/e2e/mcp-servers.test.ts.

Besides pure tools it has tools with side effects on files, for the durability tests. Each such call
appends a line to the journal file named by PY_MCP_JOURNAL ("<tool> started", "<tool> cancelled"), so a
test can see what the server really did; with a `release` path a call waits until that file exists.
PY_MCP_LISTING_FILE, if set, is read at every tools/list into the description of `count_lines`: the
same server lists its tools differently once the file changes.

`pay` and `quote`, for the chaos run (support/chaos.ts), report each execution to the side-effect
server at PY_MCP_EFFECTS_URL (support/side-effects.ts, `POST /effect`) as it begins and as it ends,
with the worker that started this server (PY_MCP_WORKER), so executions are counted outside the workers.
`transfer` reports the same way, but once begun it completes whatever it is told (it ignores
notifications/cancelled), as a server that cannot take back what it started does.

PY_MCP_START_DELAY (seconds) makes the server take that long to start: it writes a line to stderr and
sleeps before it reads its first request (a slow start: a cold cache, a big import).
"""

import json
import os
import sys
import time
import urllib.request
from typing import TypedDict

import anyio
from mcp.server.fastmcp import Context, FastMCP
from mcp.types import CallToolResult, TextContent, ToolAnnotations

JOURNAL = os.environ.get("PY_MCP_JOURNAL", "")
EFFECTS_URL = os.environ.get("PY_MCP_EFFECTS_URL", "")
WORKER = os.environ.get("PY_MCP_WORKER", "python")
LISTING_FILE = os.environ.get("PY_MCP_LISTING_FILE", "")


def count_lines_description() -> str:
    listing = open(LISTING_FILE, encoding="utf-8").read().strip() if LISTING_FILE else "v0"
    return f"Counts the lines of a file (listing {listing})."


class PythonTools(FastMCP):
    async def list_tools(self):
        tools = await super().list_tools()
        for tool in tools:
            if tool.name == "count_lines":
                tool.description = count_lines_description()
        return tools


server = PythonTools("python-tools")


def journal(line: str) -> None:
    if JOURNAL:
        with open(JOURNAL, "a", encoding="utf-8") as file:
            file.write(f"{line} pid={os.getpid()}\n")


async def released(tool: str, release: str) -> None:
    """Waits until the release file exists; a cancellation (notifications/cancelled) is journaled."""
    try:
        while release and not os.path.exists(release):
            await anyio.sleep(0.05)
    except anyio.get_cancelled_exc_class():
        journal(f"{tool} cancelled")
        raise


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


@server.tool()
def forecast(city: str) -> CallToolResult:
    """A weather forecast: a sentence to read, and its figures as structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"Sunny in {city} all day, 21 °C.")],
        structuredContent={"city": city, "sky": "sunny", "celsius": 21},
    )


@server.tool(
    structured_output=False,
    annotations=ToolAnnotations(readOnlyHint=False, idempotentHint=False, destructiveHint=False),
)
async def append_line(path: str, line: str, release: str = "") -> str:
    """Appends a line to a file: every call adds one more (not idempotent)."""
    journal("append_line started")
    with open(path, "a", encoding="utf-8") as file:
        file.write(line + "\n")
    await released("append_line", release)
    return f"appended {line}"


@server.tool(structured_output=False, annotations=ToolAnnotations(readOnlyHint=True))
async def count_lines(path: str, release: str = "") -> int:
    journal("count_lines started")
    await released("count_lines", release)
    with open(path, encoding="utf-8") as file:
        return sum(1 for _ in file)


@server.tool(structured_output=False)
async def wait_for(release: str, ctx: Context) -> str:
    """Waits until a file exists, reporting progress while it waits."""
    journal("wait_for started")
    step = 0
    try:
        while not os.path.exists(release):
            step += 1
            await ctx.report_progress(step, message=f"waiting ({step})")
            await anyio.sleep(0.3)
    except anyio.get_cancelled_exc_class():
        journal("wait_for cancelled")
        raise
    return f"released after {step} progress reports"


def post_effect(tool: str, label: str, phase: str) -> None:
    """One execution's beginning or end, told to the side-effect server (the same protocol as side-effect-tools.ts)."""
    body = {"label": label, "key": f"mcp:{tool}:{label}", "worker": WORKER, "phase": phase, "tool": tool}
    request = urllib.request.Request(f"{EFFECTS_URL}/effect", data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


async def effect(tool: str, label: str, phase: str) -> None:
    if EFFECTS_URL:
        await anyio.to_thread.run_sync(post_effect, tool, label, phase)


@server.tool(
    structured_output=False,
    annotations=ToolAnnotations(readOnlyHint=False, idempotentHint=False, destructiveHint=False),
)
async def pay(label: str, seconds: float) -> str:
    """Makes a payment (a side effect: every call pays once more, not idempotent), then takes its time to confirm."""
    await effect("pay", label, "start")
    await anyio.sleep(seconds)
    await effect("pay", label, "end")
    return f"paid {label}"


@server.tool(structured_output=False, annotations=ToolAnnotations(readOnlyHint=True))
async def quote(label: str, seconds: float) -> str:
    """Looks up a price (read-only: changes nothing, so it may be asked again), taking its time."""
    await effect("quote", label, "start")
    await anyio.sleep(seconds)
    await effect("quote", label, "end")
    return f"quote for {label}: 42"


@server.tool(
    structured_output=False,
    annotations=ToolAnnotations(readOnlyHint=False, idempotentHint=False, destructiveHint=False),
)
async def transfer(label: str, seconds: float) -> str:
    """Transfers money (not idempotent): it takes `seconds`, and once begun it completes, even when cancelled."""
    with anyio.CancelScope(shield=True):
        await effect("transfer", label, "start")
        await anyio.sleep(seconds)
        await effect("transfer", label, "end")
    return f"transferred {label}"


if __name__ == "__main__":
    START_DELAY = float(os.environ.get("PY_MCP_START_DELAY", "0"))
    if START_DELAY > 0:
        print(f"python-tools: warming up for {START_DELAY:g} s", file=sys.stderr, flush=True)
        print(f"python-tools: pid {os.getpid()}", file=sys.stderr, flush=True)
        time.sleep(START_DELAY)
    server.run("stdio")
