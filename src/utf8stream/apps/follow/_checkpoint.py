"""The follower's checkpoint: its JSON format, its one validation, and its file."""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.linedecoders import line_decoder
from .._identity import FINGERPRINT_BYTES
from ._public import public
from ._records import FileIdentity

__all__ = [
    "CHECKPOINT_MAX_BYTES",
    "CheckpointError",
    "FollowCheckpoint",
    "OutputMark",
    "read_checkpoint",
    "write_checkpoint",
]


@public("utf8stream.follower")
@dataclass(frozen=True)
class OutputMark:
    """How far a program had written the lines out when their checkpoint was saved: its
    output, a regular file (``device``, ``inode``), held everything they became up to byte
    ``size``.  ``header``: the name of the last ``==> FILE <==`` header written before
    then (``utf8stream tail``), None for none.

    Bytes past ``size`` were written after the save: a restart that produces the same
    bytes again from the checkpoint can skip them instead of writing them twice.
    """

    device: int
    inode: int
    size: int
    header: str | None = None

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"device": self.device, "inode": self.inode, "size": self.size}
        if self.header is not None:
            record["header"] = self.header
        return record


@public("utf8stream")
@dataclass(frozen=True)
class FollowCheckpoint:
    """Where to resume: just past the last line delivered, in which file.

    ``path`` is the (absolute) path followed, even while a file rotated away from it is
    being read: a follower resumes only a checkpoint of the path it follows.

    ``mid_line`` is true when that was a piece of an overlong line split at a character
    boundary (the rest of the line follows, without a gap).

    ``output``: how far the program that wrote the lines out had written its output
    file (``OutputMark``), when it records that (``utf8stream tail`` does); a follower
    resuming the checkpoint ignores it.
    """

    path: str
    file: FileIdentity
    offset: int
    mid_line: bool = False
    output: OutputMark | None = None

    def to_json(self) -> str:
        record: dict[str, Any] = {
            "version": 1,
            "path": self.path,
            "offset": self.offset,
            "mid_line": self.mid_line,
            "file": {
                "device": self.file.device,
                "inode": self.file.inode,
                "head_length": self.file.head_length,
                "head_sha256": self.file.head_sha256,
            },
        }
        if self.file.encoding is not None:
            # Only then: a checkpoint without detection reads as it always did.
            record["file"]["encoding"] = self.file.encoding
        if self.output is not None:
            record["output"] = self.output.to_record()
        return json.dumps(record, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> FollowCheckpoint:
        """Parse what ``to_json`` wrote; anything else raises ``CheckpointError``.

        The text comes from a file anyone may have edited or damaged: the key set and
        every type are exact (``true`` is not a number), numbers are bounded, and a text
        over ``CHECKPOINT_MAX_BYTES`` or nested too deeply is refused before it can cost
        memory or a ``RecursionError``.
        """
        if len(text) > CHECKPOINT_MAX_BYTES:
            raise CheckpointError(f"larger than {CHECKPOINT_MAX_BYTES} bytes")
        try:
            raw = json.loads(text)
        except RecursionError:
            raise CheckpointError("nested too deeply") from None
        except ValueError as exc:  # also UnicodeDecodeError and overlong integer literals
            raise CheckpointError(f"not JSON ({exc})") from None
        version = raw.get("version") if isinstance(raw, dict) else None
        if (
            isinstance(raw, dict)
            and "version" in raw
            and (type(version) is not int or version != 1)
        ):
            raise CheckpointError(f"unknown version {_shown(version)} (expected 1)")
        record = _expect_object(raw, _CHECKPOINT_KEYS, "the checkpoint", _OPTIONAL_KEYS)
        file = _expect_object(record["file"], _IDENTITY_KEYS, '"file"', _OPTIONAL_IDENTITY_KEYS)
        mid_line = record["mid_line"]
        if type(mid_line) is not bool:
            raise CheckpointError(f'"mid_line" must be true or false, not {_shown(mid_line)}')
        checkpoint = cls(
            path=_expect_path(record["path"]),
            file=FileIdentity(
                device=_expect_int(file, "device", _ID_LIMIT),
                inode=_expect_int(file, "inode", _ID_LIMIT),
                head_length=_expect_int(file, "head_length", FINGERPRINT_BYTES + 1),
                head_sha256=_expect_digest(file["head_sha256"]),
                encoding=_expect_detected(file.get("encoding")),
            ),
            offset=_expect_int(record, "offset", _OFFSET_LIMIT),
            mid_line=mid_line,
            output=_expect_output(record["output"]) if "output" in record else None,
        )
        return checkpoint


@public("utf8stream")
class CheckpointError(ValueError):
    """A checkpoint that cannot be used: damaged, hostile, or for another file."""


#: A checkpoint is about 300 bytes; anything much larger is not one.
CHECKPOINT_MAX_BYTES = 1 << 16
_CHECKPOINT_KEYS = frozenset({"version", "path", "offset", "mid_line", "file"})
_OPTIONAL_KEYS = frozenset({"output"})
_OUTPUT_KEYS = frozenset({"device", "inode", "size"})
_OPTIONAL_OUTPUT_KEYS = frozenset({"header"})
_IDENTITY_KEYS = frozenset({"device", "inode", "head_length", "head_sha256"})
_OPTIONAL_IDENTITY_KEYS = frozenset({"encoding"})
#: Offsets are ``off_t`` (signed 64 bits); device and inode numbers are unsigned 64 bits.
_OFFSET_LIMIT = 1 << 63
_ID_LIMIT = 1 << 64
_DIGEST = re.compile(r"[0-9a-f]{64}")


def _shown(value: object) -> str:
    """A value for a message, cut short: it comes from a file, and may be huge."""
    text = (
        json.dumps(value) if isinstance(value, (str, int, float, bool)) else type(value).__name__
    )
    return text if len(text) <= 40 else text[:37] + "..."


def _expect_object(
    value: object, keys: frozenset[str], what: str, optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CheckpointError(f"{what} must be a JSON object, not {_shown(value)}")
    missing, extra = keys - value.keys(), value.keys() - keys - optional
    if missing:
        raise CheckpointError(f"{what} lacks {', '.join(sorted(missing))}")
    if extra:
        names = ", ".join(_shown(k) for k in sorted(extra)[:3])
        raise CheckpointError(f"{what} has unknown keys: {names}")
    return value


def _expect_int(record: dict[str, Any], key: str, limit: int) -> int:
    value = record[key]
    if type(value) is not int or not 0 <= value < limit:
        raise CheckpointError(
            f'"{key}" must be an integer from 0 to {limit - 1}, not {_shown(value)}'
        )
    return value


def _expect_digest(value: object) -> str:
    if not isinstance(value, str) or not _DIGEST.fullmatch(value):
        raise CheckpointError(f'"head_sha256" must be 64 hex digits, not {_shown(value)}')
    return value


def _expect_detected(value: object) -> str | None:
    """The encoding ``"auto"`` chose for the file: a codec lines can be cut in."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            line_decoder(value)
        except (ValueError, LookupError):
            pass
        else:
            return value
    raise CheckpointError(
        f'"encoding" must be an encoding lines can be cut in (as detected), not {_shown(value)}'
    )


def _expect_output(value: object) -> OutputMark:
    """The optional ``"output"`` record (absent from the checkpoints of a follower alone)."""
    record = _expect_object(value, _OUTPUT_KEYS, '"output"', _OPTIONAL_OUTPUT_KEYS)
    header = record.get("header")
    if header is not None and (not isinstance(header, str) or "\0" in header):
        raise CheckpointError(f'"header" must be a file name, not {_shown(header)}')
    return OutputMark(
        device=_expect_int(record, "device", _ID_LIMIT),
        inode=_expect_int(record, "inode", _ID_LIMIT),
        size=_expect_int(record, "size", _OFFSET_LIMIT),
        header=header,
    )


def _expect_path(value: object) -> str:
    if not isinstance(value, str) or not value or "\0" in value:
        raise CheckpointError(f'"path" must be a file name, not {_shown(value)}')
    try:
        os.fsencode(value)
    except UnicodeError:
        raise CheckpointError(f'"path" is not a file name: {_shown(value)}') from None
    return value


def _validated(checkpoint: FollowCheckpoint) -> FollowCheckpoint:
    """``checkpoint`` if a program-built one is as sane as a parsed one must be."""
    return FollowCheckpoint.from_json(checkpoint.to_json())


def read_checkpoint(path: str | os.PathLike[str]) -> FollowCheckpoint:
    """Read a checkpoint written by ``write_checkpoint``; ``CheckpointError`` if unusable.

    At most ``CHECKPOINT_MAX_BYTES`` are read, whatever the file holds.
    """
    with open(path, "rb") as f:
        data = f.read(CHECKPOINT_MAX_BYTES + 1)
    return FollowCheckpoint.from_json(data)


def write_checkpoint(
    checkpoint: FollowCheckpoint, path: str | os.PathLike[str], *, durable: bool = True
) -> None:
    """Write ``checkpoint`` to ``path`` atomically (temporary file, fsync, rename).

    ``durable=False`` leaves out the fsync: the rename is still atomic, and what a
    process killed with SIGKILL wrote stays (the kernel's page cache is not the
    process's); only a power loss or a kernel crash can take the latest checkpoints
    back.  An ``OSError`` names ``path`` (not the temporary file, which is removed).
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(checkpoint.to_json())
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise OSError(exc.errno, exc.strerror, os.fspath(path)) from exc
