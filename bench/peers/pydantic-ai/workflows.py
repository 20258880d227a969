"""The scenario on Pydantic AI's Temporal integration: TemporalAgent.run in the workflow."""

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_ai.usage import UsageLimits

    from agent import temporal_agent


@workflow.defn
class PydanticAiScenario:
    @workflow.run
    async def run(self, iterations: int) -> str:
        result = await temporal_agent.run("repeat", usage_limits=UsageLimits(request_limit=iterations + 2))
        return str(result.output)
