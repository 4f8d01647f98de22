"""Open a store from a URL. Drivers are imported only for the scheme asked for."""

from __future__ import annotations

import importlib

from memorybank.errors import ConfigurationError
from memorybank.stores.contract._async.store import AsyncStore

__all__ = ["SCHEMES", "open_store", "sqlite_path"]

#: scheme -> (store folder under memorybank.stores, class name, pip extra)
SCHEMES: dict[str, tuple[str, str, str | None]] = {
    "memory": ("memory", "AsyncInMemoryStore", None),
    "sqlite": ("sqlite", "AsyncSQLiteStore", None),
    "postgresql": ("postgres", "AsyncPostgresStore", "postgres"),
    "postgres": ("postgres", "AsyncPostgresStore", "postgres"),
    "redis": ("redis", "AsyncRedisStore", "redis"),
    "rediss": ("redis", "AsyncRedisStore", "redis"),
    "mysql": ("mysql", "AsyncMySQLStore", "mysql"),
    "mariadb": ("mysql", "AsyncMySQLStore", "mysql"),
    "http": ("http", "AsyncHTTPStore", "remote"),
    "https": ("http", "AsyncHTTPStore", "remote"),
}


def sqlite_path(url: str) -> str:
    """The file path of a ``sqlite://`` URL, read as SQLAlchemy does.

    ``sqlite:///rel.db`` is relative to the working directory,
    ``sqlite:////abs/x.db`` is absolute, ``sqlite://`` and
    ``sqlite:///:memory:`` are an in-memory database.
    """
    rest = url[len("sqlite://") :]
    if rest in ("", "/", "/:memory:"):
        return ":memory:"
    if not rest.startswith("/"):
        raise ConfigurationError(
            f"bad SQLite URL {url!r}: use sqlite:///relative.db or sqlite:////absolute.db"
        )
    path = rest[1:].split("?", 1)[0]
    if not path:
        raise ConfigurationError(f"bad SQLite URL {url!r}: no path")
    return path


def _scheme(url: str) -> str:
    """``urllib.parse.urlsplit(url).scheme``, without importing ``urllib`` (and with it
    ``ipaddress``) at every start: a letter, then letters, digits, ``+``, ``-``, ``.``."""
    head, colon, _ = url.strip().partition(":")
    if colon and head[:1].isascii() and head[:1].isalpha():
        if all(c.isascii() and (c.isalnum() or c in "+-.") for c in head):
            return head.lower()
    return ""


def open_store(url: str, *, api_key: str | None = None) -> AsyncStore:
    """A store for ``url`` that the caller owns (and must close).

    ``api_key`` is the key of an ``http(s)://`` store (a memorybank server;
    ``None`` there reads ``$MEMORYBANK_API_KEY``); other stores refuse it.
    """
    scheme = _scheme(url).split("+", 1)[0].lower()
    if scheme not in SCHEMES:
        known = ", ".join(sorted(f"{s}://" for s in SCHEMES))
        raise ConfigurationError(f"unknown store URL scheme {scheme!r} in {url!r}; use {known}")
    module_name, class_name, extra = SCHEMES[scheme]
    if api_key is not None and module_name != "http":
        raise ConfigurationError(f"api_key is for http(s):// stores, not {scheme}://")
    # ``memorybank.stores.<store>._async`` here, ``._sync`` in the generated twin.
    flavor = __name__.rsplit(".", 2)[1]
    try:
        module = importlib.import_module(f"memorybank.stores.{module_name}.{flavor}")
    except ImportError as error:
        if extra is None:
            raise
        raise ConfigurationError(
            f"the {scheme}:// store needs its driver: pip install 'memorybank[{extra}]'"
        ) from error
    cls = getattr(module, class_name)
    if scheme == "memory":
        store: AsyncStore = cls()
    elif module_name == "http":
        store = cls.from_url(url, api_key=api_key)
    else:
        store = cls.from_url(url)
    return store
