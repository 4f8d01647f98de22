"""The support bot on PostgreSQL: the same code, another URL.

    pip install 'memorybank[postgres]'
    python examples/support_bot_postgres.py [postgresql://user@host/db] [table_prefix_]

The tables (named with the prefix, default ``memorybank_``) are created on first use. Any
number of bot processes can share the database: appends from all of them are ordered and
never lost.
"""

from __future__ import annotations

import sys

from support_bot import report

from memorybank import Memory
from memorybank.stores import PostgresStore

url = sys.argv[1] if len(sys.argv) > 1 else "postgresql://postgres@127.0.0.1:5432/test"
prefix = sys.argv[2] if len(sys.argv) > 2 else "memorybank_"
store = PostgresStore.from_url(url, prefix=prefix, pool_size=2)
try:
    with Memory(store) as memory:
        report(memory)
finally:
    store.close()
