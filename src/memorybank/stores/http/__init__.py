"""The remote store: the contract over HTTP to ``memorybank serve`` (wire format here).

Import the classes from ``memorybank.stores`` (``HTTPStore``, ``AsyncHTTPStore``)."""
