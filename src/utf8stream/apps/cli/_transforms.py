"""``--normalize`` and ``--fix-mojibake``: the text transforms of ``decode``,
``transcode`` and ``tail`` (``utf8stream.transforms``), loaded only when asked for."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # ``typing`` itself is not imported: start-up
if TYPE_CHECKING:
    from ...core.transform import TextTransform

#: The Unicode normalization forms ``--normalize`` takes.
FORMS = ("NFC", "NFD", "NFKC", "NFKD")


def add_transform_options(parser: argparse.ArgumentParser, where: str) -> None:
    """The two options, whose help says ``where`` they apply (each line, the text)."""
    parser.add_argument(
        "--fix-mojibake",
        action="store_true",
        help=f"repair mojibake in {where}: UTF-8 text once decoded as cp1252, latin-1, "
        "cp1250, cp1251, mac_roman or another single-byte code page (once or twice), "
        "as ftfy.fix_encoding does; text that is not mojibake is left as it is",
    )
    parser.add_argument(
        "--normalize",
        type=str.upper,
        choices=FORMS,
        metavar="FORM",
        help=f"normalize {where} to the Unicode normalization form NFC, NFD, NFKC or NFKD "
        "(as Python's unicodedata.normalize, after --fix-mojibake; runs of more than 30 "
        "combining marks get U+034F as the stream-safe format of UAX 15 says)",
    )


def transforms_of(args: argparse.Namespace) -> list[TextTransform]:
    """New transforms for what the options ask (mojibake repaired first: the text it
    gives back may need normalizing), for one stream."""
    transforms: list[TextTransform] = []
    if args.fix_mojibake:
        from ...core.mojibake import MojibakeRepairer

        transforms.append(MojibakeRepairer())
    if args.normalize is not None:
        from ...core.normalize import Normalizer

        transforms.append(Normalizer(args.normalize))
    return transforms


def transform_of(args: argparse.Namespace) -> TextTransform | None:
    """``transforms_of`` as one transform (``None``: none asked for)."""
    transforms = transforms_of(args)
    if not transforms:
        return None
    from ...core.transform import chain

    return chain(*transforms)
