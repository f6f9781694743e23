"""Transforms on the way out of the text APIs: what ``transforms=`` means everywhere.

Theory of operation
-------------------
Every text API of utf8stream takes ``transforms=``: one ``TextTransform`` or a sequence
of them, done in order (``chain``).  This module is the one place that says how they
apply, so that the adapters and the applications only call it.

* **A text stream** (``Utf8ReceiveStream``, ``transcode_file``, ``Transcoder``): the
  decoded text goes through the transform piece by piece; the end of the stream is its
  ``final=True``.  The transform carries up to its ``max_carry`` between pieces, so a
  checkpoint of the stream must hold the transform's too: ``TransformingDecoder`` joins
  a decoder and a transform, and its ``TransformedCheckpoint`` both checkpoints
  (``transformingdecoder.py``).
* **Lines** (``LineSplitter``, ``LineReceiveStream``, ``follow``, ``follow_many``,
  ``utf8stream.dask.read_text``): a newline is a boundary for every transform
  utf8stream ships (no normalization or repair reaches across one), so each line's text
  is transformed whole, with ``final=True``, and its newline is kept out of the
  transform (with ``keepends`` it is put back after).  Nothing is carried from one line
  to the next: a checkpoint at a line boundary needs no transform state.  A piece of a
  line cut by ``on_overlong="split"`` or ``"truncate"`` is transformed as a line of its
  own; a ``LineTooLong`` is handed out as it is.  The events' offsets count the
  characters of the lines' texts, newlines left out.
* **Many streams at once** (``follow_many``'s files, Dask's blocks, a parallel run's
  pieces): a transform holds the state of one stream, so each stream gets
  ``fresh_copy`` of the transforms given: the same kind and options, built from their
  checkpoint, nothing carried, positions from zero, the same ``on_change``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import TypeAlias

    from .transform import OnChange, TextTransform, TransformCheckpoint

    #: What ``transforms=`` takes: nothing, one transform, or several done in order.
    Transforms: TypeAlias = TextTransform | Sequence[TextTransform] | None

__all__ = [
    "LineTransform",
    "Transforms",
    "as_transform",
    "fresh_copy",
    "fresh_from",
]


def as_transform(transforms: Transforms) -> TextTransform | None:
    """The one transform ``transforms`` stands for (``None``: none, nor for an empty
    sequence); a ``TypeError`` for anything that is not a transform."""
    if transforms is None:
        return None
    if isinstance(transforms, Sequence) and not isinstance(transforms, (str, bytes)):
        parts = tuple(transforms)
        if not parts:
            return None
        for part in parts:
            _check(part)
        # Here, not at the top: a program that asks for no transform (the command line
        # at start-up) does without the protocol's module.
        from .transform import chain

        return chain(*parts)
    _check(transforms)
    return transforms


def _check(transform: object) -> None:
    from .transform import TextTransform

    if not isinstance(transform, TextTransform):
        raise TypeError(
            "transforms= takes a text transform (Normalizer, MojibakeRepairer, ...) or a"
            f" sequence of them, not {type(transform).__name__}"
        )


def fresh_copy(transform: TextTransform) -> TextTransform:
    """A new transform of the same kind and options: nothing carried, positions from
    zero, the same ``on_change``.  What each of many streams is given."""
    return fresh_from(transform.checkpoint(), transform.on_change)


def fresh_from(
    checkpoint: TransformCheckpoint, on_change: OnChange | None = None
) -> TextTransform:
    """``fresh_copy`` of the transform ``checkpoint`` was taken of: what a task in
    another process is given (a checkpoint is plain data)."""
    from .transform import transform_from_checkpoint

    copy = transform_from_checkpoint(checkpoint, on_change)
    copy.reset()
    return copy


class LineTransform:
    """A transform applied to lines: each line's text whole, its newline kept out.

    ``newline`` and ``keepends`` are those of the reader the lines come from: with
    ``keepends`` the newline that ends a line (under universal newlines ``\\r\\n``,
    ``\\n`` or ``\\r``) is taken off before the transform and put back after it.
    """

    __slots__ = ("_ends", "_transform", "transform")

    def __init__(self, transform: TextTransform, newline: str | None, keepends: bool) -> None:
        self.transform = transform
        self._transform = transform.transform
        self._ends: tuple[str, ...] = (
            () if not keepends else ("\r\n", "\n", "\r") if newline is None else (newline,)
        )

    def line(self, text: str) -> str:
        """One line's text, transformed (``final=True``: nothing is carried after it)."""
        for end in self._ends:
            if text.endswith(end):
                return self._transform(text[: len(text) - len(end)], True) + end
        return self._transform(text, True)

    def lines(self, items: list[Any]) -> list[Any]:
        """The lines among ``items`` transformed in place (other items, such as a
        ``LineTooLong``, are left as they are); ``items`` is returned."""
        line = self.line
        for i, item in enumerate(items):
            if type(item) is str:
                items[i] = line(item)
        return items
