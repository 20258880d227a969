"""Push-notification configs from Python's a2a-sdk (the cross-SDK check of docs/gateway.md, "Push notifications").

usage: a2a_push_client.py AGENT_URL KEY BINDING RECEIVER_URL TOKEN QUESTION
Starts a task on BINDING (JSONRPC or HTTP+JSON) without waiting for it, waits until it asks for a
decision, then creates a push-notification config on it (id "py"), reads it back (Get, List until it is
listed) and prints one line per answer, then the task's id.
"""

import asyncio
import sys
import uuid

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskPushNotificationConfig,
    TaskState,
)


async def main(url: str, key: str, binding: str, receiver: str, token: str, question: str) -> None:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http:
        config = ClientConfig(
            httpx_client=http, supported_protocol_bindings=[binding], use_client_preference=True, streaming=False
        )
        client = await ClientFactory(config).create_from_url(url)
        message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=question)])
        request = SendMessageRequest(message=message, configuration=SendMessageConfiguration(return_immediately=True))
        task_id = ""
        async for response in client.send_message(request):
            task_id = response.task.id
        while (await client.get_task(GetTaskRequest(id=task_id))).status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            await asyncio.sleep(0.2)
        push = TaskPushNotificationConfig(task_id=task_id, id="py", url=receiver, token=token)
        created = await client.create_task_push_notification_config(push)
        print("created", created.id, created.url == receiver, created.token == token)
        got = await client.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task_id, id="py"))
        print("get", got.id, got.url == receiver)
        # List reads Temporal's visibility store, which may take a moment to show a new config.
        for _ in range(100):
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            if listed.configs:
                break
            await asyncio.sleep(0.2)
        print("list", [one.id for one in listed.configs])
        print("task", task_id)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
