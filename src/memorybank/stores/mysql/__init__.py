"""The MySQL/MariaDB store: schema, rows and pools (here), the store (``_async``/``_sync``).

Import the classes from ``memorybank.stores`` (``MySQLStore``, ``AsyncMySQLStore``)."""
