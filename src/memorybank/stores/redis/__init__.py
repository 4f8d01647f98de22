"""The Redis store: codec, Lua scripts and compat (here), the store (``_async``/``_sync``).

Import the classes from ``memorybank.stores`` (``RedisStore``, ``AsyncRedisStore``)."""
