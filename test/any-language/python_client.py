"""A service in Python drives a patchloop run with Temporal's Python SDK: start, signal, query, update, result.

Usage: python python_client.py ADDRESS TASK_QUEUE WORKFLOW_ID
Prints one JSON line: the status seen while running, the limits extend_budget answered, the result.
"""

import asyncio
import json
import os
import sys

from temporalio.client import Client


async def main() -> None:
    address, task_queue, workflow_id = sys.argv[1:4]
    client = await Client.connect(address)
    handle = await client.start_workflow(
        "agentRun",
        {"agent": "assistant", "input": "What is 2 + 3?", "history": []},
        id=workflow_id,
        task_queue=task_queue,
    )
    await handle.signal("user_message", {"content": "and also hello"})
    status = await handle.query("status")
    # Once the run has opened with its agent's budget (until then it reports none), raise its token bound.
    while (await handle.query("status")).get("budget") is None:
        await asyncio.sleep(0.1)
    limits = await handle.execute_update("extend_budget", {"tokens": 50000})
    result = await handle.result()
    summary = {"status": {"state": status["state"], "agent": status["agent"]}, "limits": limits, "result": result}
    print(json.dumps(summary), flush=True)


asyncio.run(main())
# The SDK's Rust bridge threads can outlive the event loop and abort a short-lived process while the
# interpreter finalizes (temporalio/sdk-python#300, open): everything is done and printed, so skip
# the teardown. An exception in main() still exits non-zero above, before this line.
os._exit(0)
