"""A webhook delivery worker in a process of its own, for ``test_workers``:
``python -m tests.webhooks._deliverer SPEC LEASE``.

Opens the test's store (``StoreSpec`` JSON), prints ``{"ready": <worker owner id>}``
and delivers until it is killed.
"""

from __future__ import annotations

import asyncio
import json
import sys

from memorybank.memory._async.memory import AsyncMemory
from memorybank.webhooks.delivery import WebhookWorker
from tests.reliability._harness import StoreSpec, Words


async def main(spec: StoreSpec, lease: float) -> None:
    memory = AsyncMemory(spec.open_async(), tokenizer=Words())
    worker = WebhookWorker(
        memory,
        lease=lease,
        poll=0.05,
        timeout=5.0,
        retry_base=0.01,
        retry_max=0.1,
        max_failures=1000,
    )
    async with worker:
        print(json.dumps({"ready": worker.owner}), flush=True)
        await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    asyncio.run(main(StoreSpec.from_json(sys.argv[1]), float(sys.argv[2])))
