"""A SQLite store's HNSW index and vector matrix, persisted next to the database.

Files live in ``<database>.ann/``, per (table prefix, tenant, model, kind) a
manifest ``<stem>.json`` and the files it names, ``<stem>.<token>.usearch``
(the usearch index, keyed by rowid; absent when only the vectors are shared),
``.f32`` (the vectors it holds, float32, in rowid order, then zeroed rows of room for
appends: ``capacity`` rows in all), ``.i64`` (their rowids) and ``.ids`` (their ids,
JSON). The stem is ``<sha256(prefix, tenant)[:16]>-<sha256(model)[:16]>-<sha256(kind)[:8]>``.

Sharing: the vectors are mapped copy-on-write (``Persisted.room``), so every process of
one host that loads the same files holds one copy of them in the page cache; rows a
process appends into the room, or zeroes when they are deleted, become pages of its own
(the files never change once written: a new state is a new token).

Writing (``save``): new files under a fresh token, each written to a temporary
name, fsynced and renamed; then the manifest the same way, then the directory
is fsynced and the files of older tokens are removed. A crash at any point
leaves the old manifest with its old files, or the new ones: never a manifest
naming files that are not complete (and if one did, the sizes and CRC-32s it
records would not match).

Trust (``load``): nothing is used unless the manifest parses, names this
(prefix, tenant, model, kind, dimension), and every file has the recorded size
and CRC-32. The caller then compares what the manifest says it covers (the
live rowids up to ``max_rowid`` as of the database's deletion log sequence
``log_seq``, and its update count ``deletes`` for the key) with the database in
one snapshot: the rows the log shows deleted since ``log_seq`` are dropped
from what was loaded (and from the index), and if the update count is equal,
the log still holds every deletion since ``log_seq`` (it keeps the newest
``VECTOR_LOG_KEEP``) and the rowids up to ``max_rowid``, read from the
database's index, are the remaining rowids, the index and the ids are exact
for those rows and only rows beyond ``max_rowid`` are read and added (rowids
are AUTOINCREMENT: never given twice, new rows are above every older one).
Otherwise (a manifest of schema version 8 has no ``log_seq``) it is checked
row by row (``VectorSlot.inherit_ann``) or rebuilt. Scope is never taken from
the files: it is read from the database and the final hits are re-checked in
SQL.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import mmap
import os
import secrets
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from memorybank.stores.vectors.exact import VectorSlot
else:
    from memorybank.runtime.np import np

from memorybank.runtime.native import usearch_index
from memorybank.stores.vectors.exact import configure_ann

__all__ = [
    "Files",
    "Persisted",
    "directory",
    "load",
    "remove_tenant",
    "save",
    "save_slot",
    "stem",
]

_VERSION = 1
_PARTS = ("usearch", "f32", "i64", "ids")
#: Rows of room for appends after the vectors of a saved ``.f32`` file: a share of them,
#: at least ``ROOM_MIN``.
ROOM_SHARE = 0.25
ROOM_MIN = 1024
#: A search re-saves an index that grew by this many rows and this share since its files
#: (closing the store saves any growth).
SAVE_AFTER_ROWS = 1000
SAVE_AFTER_SHARE = 0.1
_log = logging.getLogger("memorybank.stores.vectors")


def _h(*parts: str, size: int = 16) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:size]


def directory(db_path: str) -> Path:
    return Path(db_path + ".ann")


def tenant_part(prefix: str, tenant: str) -> str:
    return _h(prefix, tenant)


def stem(prefix: str, tenant: str, model_id: str, kind: str) -> str:
    return f"{tenant_part(prefix, tenant)}-{_h(model_id)}-{_h(kind, size=8)}"


@dataclass
class Persisted:
    """What a manifest covers, and the loaded index, vectors and rowids."""

    #: The HNSW index (None: the vectors alone were saved, to be shared).
    index: Any
    vectors: NDArray[np.float32]
    rowids: NDArray[np.int64]
    max_rowid: int
    deletes: int
    ids: list[str]
    #: The deletion log sequence the files are current for (None: unknown, old files).
    log_seq: int | None = None
    #: ``vectors`` and the zeroed rows of room after them (``capacity`` rows): the file
    #: mapped copy-on-write, writable; the first ``len(vectors)`` rows are ``vectors``.
    room: NDArray[np.float32] | None = None


def _map(path: Path, *, private: bool = False) -> bytes | mmap.mmap:
    """The file's bytes, memory-mapped (not copied) unless empty: read-only, or
    ``private``: writable copy-on-write (a write changes this process's page only)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        access = mmap.ACCESS_COPY if private else mmap.ACCESS_READ
        return mmap.mmap(f.fileno(), 0, access=access)


def _crc(data: bytes | memoryview | mmap.mmap) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _crcs(buffers: Sequence[bytes | mmap.mmap]) -> list[int]:
    """``_crc`` of each buffer, the largest in a second thread (zlib releases the GIL
    while it sums): a new process's first search waits for the longer one only."""
    if len(buffers) < 2:
        return [_crc(b) for b in buffers]
    largest = max(range(len(buffers)), key=lambda i: len(buffers[i]))
    out: dict[int, int] = {}
    worker = threading.Thread(target=lambda: out.__setitem__(largest, _crc(buffers[largest])))
    worker.start()
    try:
        for i, data in enumerate(buffers):
            if i != largest:
                out[i] = _crc(data)
    finally:
        worker.join()
    return [out[i] for i in range(len(buffers))]


def _identity(prefix: str, tenant: str, model_id: str, kind: str, dim: int) -> dict[str, Any]:
    return {
        "version": _VERSION,
        "prefix": prefix,
        "tenant": _h(tenant, size=64),
        "model": model_id,
        "kind": kind,
        "dim": dim,
    }


def load(
    folder: Path,
    prefix: str,
    tenant: str,
    model_id: str,
    kind: str,
    dim: int,
    *,
    index: bool = True,
) -> Persisted | None:
    """The persisted index of the key if every check passes, else None (logged).
    ``index=False``: the vectors only (``Persisted.index`` None), the index not read."""
    name = stem(prefix, tenant, model_id, kind)
    manifest_path = folder / f"{name}.json"
    try:
        manifest = json.loads(manifest_path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        _log.warning("ANN index manifest %s unreadable (%s): rebuilding", manifest_path, error)
        return None
    try:
        if not isinstance(manifest, dict) or any(
            manifest.get(k) != v for k, v in _identity(prefix, tenant, model_id, kind, dim).items()
        ):
            _log.warning("ANN index manifest %s is for something else: rebuilding", manifest_path)
            return None
        parts = [p for p in _PARTS if p in manifest["files"]]
        if not index:
            parts = [p for p in parts if p != "usearch"]
        if parts != list(_PARTS[-len(parts) :]) or len(parts) < len(_PARTS) - 1:
            raise ValueError("the manifest names other files")
        files: dict[str, bytes | mmap.mmap] = {}
        for part in parts:
            size, _ = manifest["files"][part]
            path = folder / f"{name}.{manifest['token']}.{part}"
            files[part] = data = _map(path, private=part == "f32")
            if len(data) != size:
                _log.warning("ANN index file %s.%s is damaged: rebuilding", name, part)
                return None
        for part, crc in zip(parts, _crcs([files[p] for p in parts]), strict=True):
            if crc != manifest["files"][part][1]:
                _log.warning("ANN index file %s.%s is damaged: rebuilding", name, part)
                return None
        count = int(manifest["count"])
        capacity = int(manifest.get("capacity", count))
        room = np.frombuffer(files["f32"], dtype="<f4")
        rowids = np.frombuffer(files["i64"], dtype="<i8")
        ids = json.loads(files["ids"][:])
        if not isinstance(ids, list) or not set(map(type, ids)) <= {str}:
            raise ValueError("ids are not a list of strings")
        if (
            capacity < count
            or room.size != capacity * dim
            or rowids.size != count
            or len(ids) != count
        ):
            _log.warning("ANN index files of %s disagree with the manifest: rebuilding", name)
            return None
        room = room.reshape(capacity, dim)

        ann = None
        if "usearch" in files:
            # a view of the mapped file (nothing copied; read-only): a builder that
            # extends it works on a copy (``VectorSlot._build_rows``)
            ann = usearch_index().restore(memoryview(files["usearch"]), view=True)
            if ann is not None:
                # kept mapped while the view lives
                setattr(ann, "memorybank_mapped", files["usearch"])  # noqa: B010
            if ann is None or len(ann) != count or ann.ndim != dim:
                _log.warning("ANN index %s did not load: rebuilding", name)
                return None
            configure_ann(ann)
        return Persisted(
            index=ann,
            room=room if room.flags.writeable else None,
            vectors=room[:count],
            rowids=rowids.astype(np.int64, copy=False),
            max_rowid=int(manifest["max_rowid"]),
            deletes=int(manifest["deletes"]),
            ids=ids,
            log_seq=None if manifest.get("log_seq") is None else int(manifest["log_seq"]),
        )
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as error:
        _log.warning("ANN index %s unusable (%s): rebuilding", name, error)
        return None


def _write(path: Path, data: bytes | memoryview, *, durable: bool = True) -> None:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def save(
    folder: Path,
    prefix: str,
    tenant: str,
    model_id: str,
    kind: str,
    index: Any,
    vectors: NDArray[np.float32],
    rowids: NDArray[np.int64],
    ids: Sequence[str],
    deletes: int,
    log_seq: int | None = None,
    *,
    durable: bool = True,
) -> str | None:
    """Persist ``index`` (exactly the ``rowids`` with ``vectors``; None: the vectors
    alone), with room for appends after the vectors (``ROOM_SHARE``); the new files'
    token, or None if they could not be written. ``durable=False``: not fsynced (a
    crash may leave files that fail their checks at the next load: rebuilt then)."""
    dim = int(vectors.shape[1])
    name = stem(prefix, tenant, model_id, kind)
    token = secrets.token_hex(6)
    capacity = len(rowids) + max(ROOM_MIN, int(len(rowids) * ROOM_SHARE))
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        room = np.zeros((capacity, dim), dtype="<f4")
        room[: len(rowids)] = vectors
        parts: dict[str, bytes | memoryview] = {}
        if index is not None:
            parts["usearch"] = memoryview(index.save())
        parts |= {
            "f32": room.data.cast("B"),
            "i64": np.ascontiguousarray(rowids, dtype="<i8").data.cast("B"),
            "ids": json.dumps(list(ids)).encode(),
        }
        files = {}
        for part, data in parts.items():
            _write(folder / f"{name}.{token}.{part}", data, durable=durable)
            files[part] = [len(data), _crc(data)]
        manifest = _identity(prefix, tenant, model_id, kind, dim) | {
            "token": token,
            "count": len(rowids),
            "capacity": capacity,
            "max_rowid": int(rowids[-1]) if len(rowids) else 0,
            "deletes": deletes,
            "log_seq": log_seq,
            "files": files,
        }
        _write(folder / f"{name}.json", json.dumps(manifest).encode(), durable=durable)
        if durable:
            _fsync_dir(folder)
    except OSError as error:
        _log.warning("vector files (index or shared vectors) of %s not written: %s", name, error)
        return None
    for old in folder.glob(f"{name}.*"):
        if old.name != f"{name}.json" and f".{token}." not in old.name:
            with contextlib.suppress(OSError):
                old.unlink()
    for tmp in folder.glob(f".{name}.*.tmp"):  # left by a crash mid-write
        with contextlib.suppress(OSError):
            tmp.unlink()
    return token


def save_slot(
    db_path: str, prefix: str, key: tuple[str, str, str], slot: VectorSlot, *, final: bool
) -> None:
    """Persist the ANN index of ``slot`` (the vectors of ``key``: tenant, model, kind)
    when it grew by ``SAVE_AFTER_ROWS`` and ``SAVE_AFTER_SHARE`` since its files (any
    growth when ``final``). Called by the slot's builder thread when it has built or
    extended the index, and by the store's ``close`` once the builders are stopped:
    never while the index is being written to."""
    if db_path == ":memory:" or not slot.has_ann() or slot.deletes is None:
        return
    rows = slot.ann_rows()
    saved = slot.saved_rows
    if saved is not None:
        # rows forgotten since count as change too: the files still hold them
        grown = rows - saved + slot.dead_since_save
        due = max(SAVE_AFTER_ROWS, int(saved * SAVE_AFTER_SHARE))
        if grown <= 0 or (not final and grown < due):
            return
    slot.saved_rows = rows  # also on failure: not retried on every search
    slot.dead_since_save = 0
    live = slot.alive[:rows]  # the index holds exactly the live rows of [0, rows)
    save(
        directory(db_path),
        prefix,
        *key,
        slot.ann_index(),
        slot.matrix[:rows][live],
        slot.rowids[:rows][live],
        [i for i, keep in zip(slot.ids[:rows], live.tolist(), strict=True) if keep],
        slot.deletes,
        slot.log_seq,
    )


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def remove_tenant(folder: Path, prefix: str, tenant: str) -> None:
    """Delete every persisted file of a tenant (after ``forget_user``: no copy survives)."""
    if not folder.is_dir():
        return
    part = tenant_part(prefix, tenant)
    for path in list(folder.glob(f"{part}-*")) + list(folder.glob(f".{part}-*")):
        with contextlib.suppress(OSError):
            path.unlink()


class Files:
    """This module's functions as one typed name, for a store that loads the module on
    first use (``hashlib``, ``secrets``, ``mmap``: not at the store's import)."""

    directory = staticmethod(directory)
    load = staticmethod(load)
    save = staticmethod(save)
    save_slot = staticmethod(save_slot)
    remove_tenant = staticmethod(remove_tenant)
