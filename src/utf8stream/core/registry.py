"""Registration with ``codecs``: the UTF-8 variants as codecs, and the ``optu-8`` policy.

Imported by ``import utf8stream``; importing it again changes nothing.  After that the
codecs ``wtf-8``, ``cesu-8``, ``mutf-8`` (alias ``java-modified-utf-8``) and ``utf-8z``
(names matched ignoring case and punctuation: ``WTF_8``, ``wtf8``) work wherever Python
takes a codec name, so ``data.decode("cesu-8")``, ``codecs.iterdecode(chunks, "wtf-8")``
and ``open(path, encoding="mutf-8")`` work, ``tell()``/``seek()`` included; so does the
error policy ``optu-8`` (``variants.optu8_errors``) for any codec.

This is the only module of ``core`` with a process-wide side effect, and it sits above
the decoder and the encoder (the codecs are built on them), so neither imports it.

Registering costs nothing: the search function loads the variants, the decoder and the
encoder only when ``codecs`` asks it for a name CPython's own codecs do not know.
"""

from __future__ import annotations

import codecs

from .optu8 import OPTU8, optu8_errors

TYPE_CHECKING = False  # ``typing`` itself is not imported by ``import utf8stream``
if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

    from .variants import Variant

__all__: list[str] = []


def _codec_info(variant: Variant) -> codecs.CodecInfo:
    """Codec classes for one variant, built on ``Utf8Decoder`` and ``Utf8Encoder``.

    The incremental encoder given to ``codecs`` completes every call (it never holds a
    high surrogate for the next one): ``io.TextIOWrapper`` never calls
    ``encode(final=True)``, so a held character would be lost at ``close()``.  In WTF-8
    a surrogate pair split between two ``write()`` calls is therefore written as two
    3-byte halves; ``Utf8Encoder(variant="wtf-8")`` joins it.
    """
    from .decoder import Utf8Decoder
    from .encoder import Utf8Encoder

    name = variant.name

    class IncrementalDecoder(Utf8Decoder):
        def __init__(self, errors: str = "strict") -> None:
            super().__init__(errors, variant=name)

    class IncrementalEncoder(Utf8Encoder):
        def __init__(self, errors: str = "strict") -> None:
            super().__init__(errors, variant=name)
            self._hold_surrogates = False

    def encode(text: str, errors: str = "strict") -> tuple[bytes, int]:
        return IncrementalEncoder(errors).encode(text, final=True), len(text)

    def decode(data: ReadableBuffer, errors: str = "strict") -> tuple[str, int]:
        view = memoryview(data)
        return IncrementalDecoder(errors).decode(view, final=True), view.nbytes

    class StreamWriter(codecs.StreamWriter):
        def encode(self, text: str, errors: str = "strict") -> tuple[bytes, int]:
            return encode(text, errors)

    class StreamReader(codecs.StreamReader):
        def decode(self, data: ReadableBuffer, errors: str = "strict") -> tuple[str, int]:
            # ``codecs.StreamReader.read`` passes the undecoded rest of the last call plus
            # the new bytes, and passes the rest alone once the stream is exhausted: that
            # is the end of the stream, where a held tail must be decoded, not dropped.
            view = memoryview(data)
            final = view.nbytes == len(self.bytebuffer)
            decoder = IncrementalDecoder(errors)
            text = decoder.decode(view, final=final)
            return text, view.nbytes - decoder.buffered

    for cls in (IncrementalDecoder, IncrementalEncoder, StreamWriter, StreamReader):
        cls.__qualname__ = cls.__name__ = f"{_class_prefix(name)}{cls.__name__}"
    return codecs.CodecInfo(
        encode,
        decode,
        streamreader=StreamReader,
        streamwriter=StreamWriter,
        incrementalencoder=IncrementalEncoder,
        incrementaldecoder=IncrementalDecoder,
        name=name,
    )


def _class_prefix(name: str) -> str:
    return name.replace("-", "").capitalize()


_CODECS: dict[str, codecs.CodecInfo] = {}


def _search(name: str) -> codecs.CodecInfo | None:
    from .variants import get_variant

    try:
        variant = get_variant(name)
    except ValueError:
        return None
    if variant.name == "utf-8":
        return None  # CPython's own codec
    info = _CODECS.get(variant.name)
    if info is None:
        info = _CODECS[variant.name] = _codec_info(variant)
    return info


codecs.register(_search)
codecs.register_error(OPTU8, optu8_errors)
