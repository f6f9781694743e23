"""trio is optional: without it utf8stream imports and runs on asyncio, and what needs
trio says how to install it.

Each test runs a fresh interpreter in which ``import trio`` fails (``sys.modules["trio"]
= None``), as on a machine where only ``pip install utf8stream`` was run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

INSTALL_HINT = "pip install 'utf8stream[trio]'"

WITHOUT_TRIO = """\
import sys
sys.modules["trio"] = None
try:
    import trio
except ImportError:
    pass
else:
    raise AssertionError("trio is still importable")
"""


def run_without_trio(script: str, tmp_path: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_TRIO + textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_import_and_every_public_name_work_without_trio(tmp_path: Path) -> None:
    out = run_without_trio(
        """
        import importlib
        import utf8stream
        from utf8stream import *
        for name in utf8stream.__all__:
            getattr(utf8stream, name)
        for module in ("lines", "follower", "stats", "boundaries", "accel"):
            module = importlib.import_module(f"utf8stream.{module}")
            for name in module.__all__:
                getattr(module, name)
        import utf8stream.apps.cli
        print("trio" in sys.modules and sys.modules["trio"] is not None)
        """,
        tmp_path,
    )
    assert out == "False\n"


def test_the_trio_module_names_the_extra(tmp_path: Path) -> None:
    out = run_without_trio(
        """
        try:
            import utf8stream.trio
        except ModuleNotFoundError as exc:
            print(exc)
        """,
        tmp_path,
    )
    assert out.splitlines() == [
        f"utf8stream.aio.trio_stream needs trio, an optional dependency of utf8stream: "
        f"{INSTALL_HINT}",
    ]


def test_asyncio_streams_and_follow_work_without_trio(tmp_path: Path) -> None:
    (tmp_path / "app.log").write_bytes(b"premi\xc3\xa8re\nbad \xff byte\n")
    out = run_without_trio(
        """
        import asyncio
        import anyio
        from utf8stream import LineReceiveStream, Utf8ReceiveStream, as_byte_stream, follow

        async def main() -> None:
            send, receive = anyio.create_memory_object_stream[bytes](10)
            for chunk in (b"caf\\xc3", b"\\xa9 ok\\n", b"\\xe6\\x97\\xa5\\n"):
                await send.send(chunk)
            send.close()
            async for line in LineReceiveStream(receive):
                print("memory:", line)

            reader = asyncio.StreamReader()
            reader.feed_data("é\\n".encode())
            reader.feed_eof()
            async with Utf8ReceiveStream(as_byte_stream(reader)) as text:
                print("asyncio:", repr(await text.receive()))

            async with follow("app.log", start=0, until_eof=True) as lines:
                async for line in lines:
                    print("follow:", line.text)

        anyio.run(main, backend="asyncio")
        """,
        tmp_path,
    )
    assert out.splitlines() == [
        "memory: café ok",
        "memory: 日",
        "asyncio: 'é\\n'",
        "follow: première",
        "follow: bad \ufffd byte",
    ]


def test_the_trio_stream_module_names_the_extra(tmp_path: Path) -> None:
    out = run_without_trio(
        """
        import utf8stream
        try:
            import utf8stream.aio.trio_stream
        except ImportError as exc:
            print(type(exc).__name__, exc.name, exc, sep="|")
        """,
        tmp_path,
    )
    assert out == (
        "ModuleNotFoundError|trio|utf8stream.aio.trio_stream needs trio, an optional "
        f"dependency of utf8stream: {INSTALL_HINT}\n"
    )


def test_the_trio_adapters_name_the_extra(tmp_path: Path) -> None:
    out = run_without_trio(
        """
        from utf8stream.aio.sources import (
            TrioByteReceiveStream, TrioByteSendStream, TrioByteStream,
        )
        for adapter in (TrioByteReceiveStream, TrioByteSendStream, TrioByteStream):
            try:
                adapter(object())
            except ImportError as exc:
                print(exc)
        """,
        tmp_path,
    )
    assert out.splitlines() == [
        f"{name} needs trio, an optional dependency of utf8stream: {INSTALL_HINT}"
        for name in ("TrioByteReceiveStream", "TrioByteSendStream", "TrioByteStream")
    ]
