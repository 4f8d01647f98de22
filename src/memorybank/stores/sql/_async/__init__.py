"""The SQL stores' shared I/O mixins (async source; the sync twins are generated)."""
