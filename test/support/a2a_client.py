"""A2A from Python's a2a-sdk (the cross-SDK check of docs/gateway.md, "A2A").

usage: a2a_client.py AGENT_URL KEY BINDING QUESTION
Streams a message to the agent on BINDING (JSONRPC or HTTP+JSON), then reads the task back (GetTask,
ListTasks): one line per update and per answer, in the same words as the JavaScript tests.
"""

import asyncio
import sys
import uuid

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import GetTaskRequest, ListTasksRequest, Message, Part, Role, SendMessageRequest, TaskState


def state_name(state: int) -> str:
    return TaskState.Name(state).removeprefix("TASK_STATE_")


def text_of(parts) -> str:
    return "".join(part.text for part in parts)


def task_line(task) -> str:
    message = text_of(task.status.message.parts)
    artifacts = [f"{artifact.artifact_id}={text_of(artifact.parts)}" for artifact in task.artifacts]
    return " | ".join([f"task {state_name(task.status.state)}", *([message] if message else []), *artifacts])


def update_line(response) -> str:
    kind = response.WhichOneof("payload")
    if kind == "task":
        return task_line(response.task)
    if kind == "status_update":
        status = response.status_update.status
        message = text_of(status.message.parts)
        return f"status {state_name(status.state)}" + (f" | {message}" if message else "")
    if kind == "artifact_update":
        artifact = response.artifact_update.artifact
        return f"artifact {artifact.artifact_id}={text_of(artifact.parts)}"
    return f"message {text_of(response.message.parts)}"


async def main(url: str, key: str, binding: str, question: str) -> None:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http:
        config = ClientConfig(httpx_client=http, supported_protocol_bindings=[binding], use_client_preference=True)
        client = await ClientFactory(config).create_from_url(url)
        message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=question)])
        task_id = ""
        async for response in client.send_message(SendMessageRequest(message=message)):
            if response.WhichOneof("payload") == "task":
                task_id = response.task.id
            print(update_line(response), flush=True)
        print("get", task_line(await client.get_task(GetTaskRequest(id=task_id))))
        listed = await client.list_tasks(ListTasksRequest(page_size=1))
        print("list", [task.id == task_id for task in listed.tasks])


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
