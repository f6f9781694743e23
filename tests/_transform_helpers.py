"""A small text transform for the tests of ``transforms=``, and its oracle.

``Pairs`` turns every ``ab`` into ``X``: it carries a trailing ``a`` between pieces (so a
chunking that cuts ``ab`` tests the carry), changes the length of the text (so offsets
move), and, like the transforms utf8stream ships, never reaches across a newline.
"""

from __future__ import annotations

from utf8stream.transforms import (
    OnChange,
    TextChange,
    TransformCheckpoint,
    register_transform,
)

KIND = "test-pairs"


def paired(text: str) -> str:
    """The oracle: what ``Pairs`` makes of ``text`` in one piece."""
    return text.replace("ab", "X")


def paired_lines(lines: list[str], keepends_newlines: tuple[str, ...] = ()) -> list[str]:
    """The oracle of a line reader with ``transforms=Pairs()``: each line on its own."""
    out = []
    for line in lines:
        end = next((e for e in keepends_newlines if line.endswith(e)), "")
        out.append(paired(line[: len(line) - len(end)]) + end)
    return out


class Pairs:
    """``ab`` becomes ``X``: a transform with a carry of one code point."""

    max_carry = 1

    def __init__(self, on_change: OnChange | None = None) -> None:
        self.on_change = on_change
        self.position = self.output_position = 0
        self._carry = ""

    def transform(self, text: str, final: bool = False) -> str:
        start = self.position - len(self._carry)
        text, self.position = self._carry + text, self.position + len(text)
        keep = 0 if final or not text.endswith("a") else 1
        body, self._carry = text[: len(text) - keep], text[len(text) - keep :]
        out = paired(body)
        if self.on_change is not None:
            at, i = self.output_position, 0
            while (i := body.find("ab", i)) >= 0:
                done = len(paired(body[:i]))
                self.on_change(TextChange(start + i, "ab", "X", at + done, KIND))
                i += 2
        self.output_position += len(out)
        return out

    def checkpoint(self) -> TransformCheckpoint:
        return TransformCheckpoint(KIND, self.position, self.output_position, self._carry)

    def reset(self) -> None:
        self.position = self.output_position = 0
        self._carry = ""

    @classmethod
    def from_checkpoint(cls, cp: TransformCheckpoint, on_change: OnChange | None) -> Pairs:
        built = cls(on_change)
        built.position, built.output_position, built._carry = (
            cp.position,
            cp.output_position,
            cp.carry,
        )
        return built


register_transform(KIND, Pairs.from_checkpoint)
