"""The conformance suite every store must pass, through the public ``AsyncMemory`` API.

Use it for your own store::

    from memorybank.testing import AsyncContract

    class TestMyStore(AsyncContract):
        @pytest.fixture
        async def store(self):
            store = MyAsyncStore(...)
            yield store
            await store.close()

The sync twin ``SyncContract`` (generated from this package) takes a sync store.
Async tests need pytest-asyncio with ``asyncio_mode = "auto"``. Every test uses
fresh ids, so a store may be shared between tests.
"""

from __future__ import annotations

from memorybank.testing._async.contract._entries import EntryCases
from memorybank.testing._async.contract._entry_ids import EntryIdCases
from memorybank.testing._async.contract._events import EventCases
from memorybank.testing._async.contract._idempotency import IdempotencyCases
from memorybank.testing._async.contract._lifecycle import LifecycleCases
from memorybank.testing._async.contract._messages import MessageCases
from memorybank.testing._async.contract._records import RecordCases
from memorybank.testing._async.contract._search import SearchCases
from memorybank.testing._async.contract._state import StateCases
from memorybank.testing._async.contract._threads import ThreadCases

__all__ = ["AsyncContract"]


class AsyncContract(
    ThreadCases,
    EntryCases,
    EntryIdCases,
    MessageCases,
    IdempotencyCases,
    StateCases,
    LifecycleCases,
    RecordCases,
    SearchCases,
    EventCases,
):
    """Behaviour every store must have. Subclasses provide the ``store`` fixture."""
