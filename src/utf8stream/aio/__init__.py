"""Adapters: anyio streams (asyncio and trio) around the core; no decoding logic here."""
