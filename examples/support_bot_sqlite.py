"""The support bot on the embedded store: one SQLite file, no server.

    python examples/support_bot_sqlite.py [path/to/bot.db]

Run it twice: the second run answers from what the first one stored.
"""

from __future__ import annotations

import sys

from support_bot import report

from memorybank import Memory

path = sys.argv[1] if len(sys.argv) > 1 else "support-bot.db"
with Memory(f"sqlite:///{path}") as memory:
    report(memory)
