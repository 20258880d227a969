"""bench:peers runner: python run.py <address> <task queue> <iterations> <model url>.
Prints {"workflowId", "runId"} once the run is done."""

import asyncio
import json
import sys
import time
from datetime import timedelta

from agents import set_tracing_disabled
from agents.models.openai_provider import OpenAIProvider
from openai import AsyncOpenAI
from temporalio.client import Client
from temporalio.contrib.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.worker import Worker

from workflows import OpenAIAgentsScenario, repeat


async def main() -> None:
    address, task_queue, iterations, model_url = sys.argv[1:5]
    set_tracing_disabled(True)
    plugin = OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=timedelta(minutes=1)),
        model_provider=OpenAIProvider(
            openai_client=AsyncOpenAI(base_url=model_url, api_key="bench"), use_responses=False
        ),
    )
    client = await Client.connect(address, plugins=[plugin])
    async with Worker(client, task_queue=task_queue, workflows=[OpenAIAgentsScenario], activities=[repeat]):
        workflow_id = f"openai-agents-{time.time_ns()}"
        handle = await client.start_workflow(
            OpenAIAgentsScenario.run, int(iterations), id=workflow_id, task_queue=task_queue
        )
        await handle.result()
        print(json.dumps({"workflowId": workflow_id, "runId": handle.first_execution_run_id}))


asyncio.run(main())
