"""The scenario on the OpenAI Agents SDK with Temporal's integration: Runner.run in the workflow, the
model through the plugin's activity, the tool as an activity returning 4 KB."""

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.contrib.openai_agents import workflow as agents_workflow

with workflow.unsafe.imports_passed_through():
    from agents import Agent, Runner


@activity.defn
async def repeat(text: str, times: int) -> str:
    return text * times


@workflow.defn
class OpenAIAgentsScenario:
    @workflow.run
    async def run(self, iterations: int) -> str:
        agent = Agent(
            name="assistant",
            instructions="Call repeat until done.",
            model="fake-model",
            tools=[agents_workflow.activity_as_tool(repeat, start_to_close_timeout=timedelta(minutes=1))],
        )
        result = await Runner.run(agent, "repeat", max_turns=iterations + 2)
        return str(result.final_output)
