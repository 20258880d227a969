"""The scenario's agent on Pydantic AI: the model at the fake model's URL (PEER_MODEL_URL), one tool
returning 4 KB. TemporalAgent runs each model call and each tool call as an activity."""

import os

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import TemporalAgent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

model = OpenAIChatModel(
    "fake-model", provider=OpenAIProvider(base_url=os.environ["PEER_MODEL_URL"], api_key="bench")
)
agent = Agent(model, name="assistant", instructions="Call repeat until done.")


@agent.tool_plain
async def repeat(text: str, times: int) -> str:
    return text * times


temporal_agent = TemporalAgent(agent)
