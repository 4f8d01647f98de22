"""MCP: memorybank's tools for the Model Context Protocol (``create_server``)."""
