"""bench:peers runner: python run.py <address> <task queue> <iterations> <model url>.
Prints {"workflowId", "runId"} once the run is done."""

import asyncio
import json
import os
import sys
import time

address, task_queue, iterations, model_url = sys.argv[1:5]
os.environ["PEER_MODEL_URL"] = model_url

from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from agent import temporal_agent  # noqa: E402
from workflows import PydanticAiScenario  # noqa: E402


async def main() -> None:
    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    async with Worker(
        client, task_queue=task_queue, workflows=[PydanticAiScenario], plugins=[AgentPlugin(temporal_agent)]
    ):
        workflow_id = f"pydantic-ai-{time.time_ns()}"
        handle = await client.start_workflow(PydanticAiScenario.run, int(iterations), id=workflow_id, task_queue=task_queue)
        await handle.result()
        print(json.dumps({"workflowId": workflow_id, "runId": handle.first_execution_run_id}))


asyncio.run(main())
