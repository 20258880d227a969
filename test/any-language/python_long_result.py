"""A service in Python reads a long run's result and transcript with Temporal's Python SDK.

Usage:
  python python_long_result.py ADDRESS WORKFLOW_ID
      The plain SDK, no external storage configured: the result, then the transcript by the paged
      `transcriptPage` query.
  python python_long_result.py ADDRESS WORKFLOW_ID S3_ENDPOINT S3_BUCKET
      The SDK configured with the S3 store patchloop's workers use (Temporal's own S3 driver, named
      "patchloop-s3"): the result, then the whole transcript by the `transcript` query, whose answer
      travels by reference when it is large.

Prints one JSON line: {"result": ..., "transcript": [...], "pages": N}. Any error exits non-zero.
"""

import asyncio
import dataclasses
import hashlib
import json
import os
import sys

from temporalio.client import Client


async def paged_transcript(handle):
    """Joins the pages of the transcript's JSON text; starts again if the run changed it meanwhile."""
    while True:
        text, offset, digest, pages = "", 0, None, 0
        while True:
            page = await handle.query("transcriptPage", {"offset": offset})
            pages += 1
            if digest is not None and page["digest"] != digest:
                break  # the transcript grew between two pages (a running run): read it again
            digest = page["digest"]
            text += page["text"]
            # Offsets are the run's own positions: pass next_offset back as it is.
            offset = page["next_offset"]
            if page["done"]:
                if hashlib.sha256(text.encode("utf-8")).hexdigest() != digest:
                    raise RuntimeError("the joined pages do not match their digest")
                return json.loads(text), pages


async def main() -> None:
    address, workflow_id = sys.argv[1:3]
    if len(sys.argv) > 3:
        # Imported only here: the plain case needs nothing beyond the SDK itself.
        import aioboto3
        from temporalio.contrib.aws.s3driver import S3StorageDriver
        from temporalio.contrib.aws.s3driver.aioboto3 import new_aioboto3_client
        from temporalio.converter import DataConverter, ExternalStorage

        endpoint, bucket = sys.argv[3:5]
        session = aioboto3.Session()
        async with session.client("s3", endpoint_url=endpoint, region_name="us-east-1") as s3:
            driver = S3StorageDriver(client=new_aioboto3_client(s3), bucket=bucket, driver_name="patchloop-s3")
            converter = dataclasses.replace(DataConverter.default, external_storage=ExternalStorage(drivers=[driver]))
            client = await Client.connect(address, data_converter=converter)
            handle = client.get_workflow_handle(workflow_id)
            result = await handle.result()
            transcript = await handle.query("transcript")
            print(json.dumps({"result": result, "transcript": transcript, "pages": 1}), flush=True)
        return
    client = await Client.connect(address)
    handle = client.get_workflow_handle(workflow_id)
    result = await handle.result()
    transcript, pages = await paged_transcript(handle)
    print(json.dumps({"result": result, "transcript": transcript, "pages": pages}), flush=True)


asyncio.run(main())
# See python_client.py: skip the interpreter's teardown once everything is printed (sdk-python#300).
os._exit(0)
