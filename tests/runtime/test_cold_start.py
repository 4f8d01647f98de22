"""A new process that opens a SQLite store and reads history imports only what it needs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memorybank import Memory

_READ = """
import sys
from memorybank import Memory
from memorybank import tokens

m = Memory("sqlite:///" + sys.argv[1])
assert [x["content"] for x in m.history(sys.argv[2], last=2)] == ["b", "c"]
print(",".join(sorted(sys.modules)))
print(tokens._cut.cache_info().currsize)
"""


def test_reading_history_in_a_new_process_skips_write_and_search_modules(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(f"sqlite:///{path}") as memory:
        thread = memory.threads.create()
        memory.entries.add_many(thread.id, [{"role": "user", "content": c} for c in "abc"])
    out = subprocess.run(
        [sys.executable, "-c", _READ, str(path), thread.id],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(Path(__file__).parents[2] / "src")},
    ).stdout.split("\n")
    modules = set(out[0].split(","))
    assert "memorybank.stores.sqlite._sync" in modules  # the check sees the read's imports
    assert "hashlib" not in modules  # only writes and keyword search hash owner ids
    assert "memorybank.runtime.backlog" not in modules  # background counts
    assert "json" not in modules  # history rows with empty metadata parse no JSON
    assert "logging" not in modules  # memorybank.runtime.log loads it when something logs
    # the store imports the vector cache and BM25 (memorybank.runtime.np stands for NumPy)
    assert "memorybank.stores.vectors.exact" in modules
    assert "numpy" not in modules  # loads with the first vector or keyword ranking
    assert "Stemmer" not in modules  # loads with the first text analyzer
    assert out[1] == "0", "the text-splitting regex was compiled at import"
