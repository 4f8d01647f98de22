"""LangGraph saver and store (async source; the sync twins are generated)."""
