"""The child of ``test_kill``: ``python -m tests.consolidation._kill_child SPEC TENANT USER``.

Opens the store of ``SPEC`` (a ``StoreSpec`` as JSON), prints ``start``, consolidates
``USER``'s facts with a lease of half a second, in chunks of 25 changes with a pause of
50 ms between two (so the parent can kill it at a chosen chunk), then prints ``done``.
"""

from __future__ import annotations

import sys

from memorybank import Memory
from memorybank.consolidation._sync import consolidation
from tests.consolidation.test_kill import CLOCK, LEASE
from tests.reliability._harness import StoreSpec


def main() -> None:
    spec, tenant, user = sys.argv[1:4]
    consolidation.PAUSE = 0.05
    consolidation.CHUNK = 25  # 64 chunks: the parent kills at chunk 0, 30 and 55
    store = StoreSpec.from_json(spec).open()
    with Memory(store, clock=CLOCK, tenant_id=tenant, consolidate_lease=LEASE) as memory:
        print("start", flush=True)
        memory.consolidate(user_id=user)
        print("done", flush=True)
    store.close()


if __name__ == "__main__":
    main()
