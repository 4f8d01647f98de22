"""The PostgreSQL store: schema, statements, rows, pgvector (here); the store in ``_async``.

Import the classes from ``memorybank.stores`` (``PostgresStore``, ``AsyncPostgresStore``)."""
