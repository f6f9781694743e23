"""Core: pure state machines (no I/O, no anyio): bytes in, text and events out."""
