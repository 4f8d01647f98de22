"""SQLite on a full disk and on a read-only file: a typed error, no corruption, data intact.

A full disk is made two ways: a real 1 MiB tmpfs mounted by the test (skipped
where mounting is not allowed), and ``PRAGMA max_page_count`` on the store's
connection, which SQLite enforces with the same ``SQLITE_FULL`` error. Either
way the write that does not fit raises ``StoreError`` (nothing of it is
stored: a batch is absent, not cut), every earlier write reads back, the file
passes ``PRAGMA integrity_check``, and once there is room again the same store
writes.

Read-only is not faked with ``chmod`` when the tests run as root (root writes
through any mode bits): the file, or its directory, is bind-mounted read-only,
so the kernel refuses writes (``EROFS``) to root too. Unprivileged runs use
``chmod``, which binds them.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorybank import Memory, StoreError
from memorybank.stores.sqlite._sync import SQLiteStore

BATCH = 3


def _umount(where: Path) -> None:
    """Unmount; lazily if something still holds a file there (a failed test's store)."""
    if subprocess.run(["umount", str(where)], capture_output=True, timeout=30).returncode:
        subprocess.run(["umount", "-l", str(where)], check=True, timeout=30)


def _mount(*args: str) -> None:
    try:
        subprocess.run(["mount", *args], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        pytest.skip(f"cannot mount here: {error}")


@contextlib.contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where))
    try:
        yield where
    finally:
        _umount(where)


@contextlib.contextmanager
def _read_only(target: Path) -> Iterator[None]:
    """``target`` (a file or a directory) is read-only to this process inside the block."""
    if os.geteuid() != 0:
        mode = target.stat().st_mode
        target.chmod(0o555 if target.is_dir() else 0o444)
        try:
            yield
        finally:
            target.chmod(mode)
        return
    _mount("--bind", str(target), str(target))
    try:
        _mount("-o", "remount,ro,bind", str(target))
        yield
    finally:
        _umount(target)


def _batch(label: str, size: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{label} {k} " + "x" * size} for k in range(BATCH)]


def _fill_until_full(memory: Memory, thread_id: str) -> tuple[list[str], StoreError]:
    """Append batches until one does not fit; the acknowledged labels and the error."""
    acknowledged: list[str] = []
    for n in range(100_000):
        try:
            memory.entries.add_many(thread_id, _batch(f"b{n}", 2000))
        except StoreError as error:
            return acknowledged, error
        acknowledged.append(f"b{n}")
    raise AssertionError("the disk never filled")


def _check_full(memory: Memory, thread_id: str, acknowledged: list[str], error: StoreError) -> None:
    assert type(error) is StoreError  # not "unavailable": retrying will not make room
    assert "is full" in str(error)
    assert isinstance(error.__cause__, sqlite3.OperationalError)
    assert error.__cause__.sqlite_errorname == "SQLITE_FULL"
    assert len(acknowledged) >= 2
    labels = [e.content.split(" ")[0] for e in memory.entries.list(thread_id) if e.content]
    assert labels == [label for label in acknowledged for _ in range(BATCH)]


def _integrity(path: Path) -> list[tuple[str]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute("PRAGMA integrity_check").fetchall()


def test_a_full_tmpfs_raises_store_error_and_keeps_every_earlier_write(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "fs", "1m") as fs:
        ballast = fs / "ballast"
        ballast.write_bytes(b"\0" * 200_000)  # removed later to make room
        path = fs / "full.db"
        with Memory(f"sqlite:///{path}") as memory:
            thread = memory.threads.create()
            acknowledged, error = _fill_until_full(memory, thread.id)
            _check_full(memory, thread.id, acknowledged, error)
            ballast.unlink()
            memory.entries.add_many(thread.id, _batch("after", 10))  # same store, room again
            assert memory.entries.count(thread.id) == BATCH * (len(acknowledged) + 1)
        assert _integrity(path) == [("ok",)]


def test_max_page_count_full_raises_store_error_and_keeps_every_earlier_write(
    tmp_path: Path,
) -> None:
    path = tmp_path / "capped.db"
    with Memory(f"sqlite:///{path}") as memory:
        thread = memory.threads.create()
        # The store's own connection: the cap is a per-connection setting.
        assert isinstance(memory.store, SQLiteStore)
        conn = memory.store._connect()
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 40}")
        acknowledged, error = _fill_until_full(memory, thread.id)
        _check_full(memory, thread.id, acknowledged, error)
        conn.execute("PRAGMA max_page_count = 1000000")
        memory.entries.add_many(thread.id, _batch("after", 10))
        assert memory.entries.count(thread.id) == BATCH * (len(acknowledged) + 1)
    assert _integrity(path) == [("ok",)]


def _seed(path: Path) -> tuple[str, list[str]]:
    with Memory(f"sqlite:///{path}") as memory:
        thread = memory.threads.create()
        stored = memory.entries.add_many(thread.id, _batch("before", 10))
        return thread.id, [e.id for e in stored]


def test_a_read_only_file_reads_and_refuses_writes_with_store_error(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    thread_id, ids = _seed(path)
    with _read_only(path), Memory(f"sqlite:///{path}") as memory:
        assert [e.id for e in memory.entries.list(thread_id)] == ids
        with pytest.raises(StoreError) as info:
            memory.entries.add(thread_id, {"role": "user", "content": "refused"})
        assert type(info.value) is StoreError
        assert "read-only" in str(info.value)
        assert isinstance(info.value.__cause__, sqlite3.OperationalError)
        assert info.value.__cause__.sqlite_errorname.startswith("SQLITE_READONLY")
        assert [e.id for e in memory.entries.list(thread_id)] == ids
    assert _integrity(path) == [("ok",)]
    with Memory(f"sqlite:///{path}") as memory:
        assert [e.id for e in memory.entries.list(thread_id)] == ids


def test_a_read_only_directory_raises_store_error_on_every_call(tmp_path: Path) -> None:
    """WAL mode needs the -wal and -shm files beside the database: none can be made."""
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "ro.db"
    thread_id, ids = _seed(path)
    with _read_only(folder), Memory(f"sqlite:///{path}") as memory:
        for call in (
            lambda: memory.entries.list(thread_id),
            lambda: memory.entries.add(thread_id, {"role": "user", "content": "refused"}),
        ):
            with pytest.raises(StoreError) as info:
                call()
            assert type(info.value) is StoreError
            assert "read-only directory" in str(info.value)
            assert isinstance(info.value.__cause__, sqlite3.OperationalError)
    assert _integrity(path) == [("ok",)]
    with Memory(f"sqlite:///{path}") as memory:
        assert [e.id for e in memory.entries.list(thread_id)] == ids
