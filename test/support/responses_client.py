"""The official openai Python client against the patchloop gateway's Responses API.

usage: responses_client.py BASE_URL KEY stream|background QUESTION
Prints one JSON line per streamed event (type, sequence_number, delta), or the background response's
states as it was polled and its answer.
"""

import json
import sys
import time

from openai import OpenAI

base_url, key, mode, question = sys.argv[1:5]
client = OpenAI(base_url=base_url, api_key=key, max_retries=0)
if mode == "stream":
    for event in client.responses.create(model="assistant", input=question, stream=True):
        print(json.dumps({"type": event.type, "sequence_number": event.sequence_number, "delta": getattr(event, "delta", None)}))
else:
    response = client.responses.create(model="assistant", input=question, background=True)
    print(json.dumps({"status": response.status}))
    deadline = time.monotonic() + 120
    while response.status in ("queued", "in_progress") and time.monotonic() < deadline:
        time.sleep(0.2)
        response = client.responses.retrieve(response.id)
    print(json.dumps({"status": response.status, "output_text": response.output_text}))
