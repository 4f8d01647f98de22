"""The SQLite store: schema (here), the store (``_async``/``_sync``).

Import the classes from ``memorybank.stores`` (``SQLiteStore``, ``AsyncSQLiteStore``)."""
