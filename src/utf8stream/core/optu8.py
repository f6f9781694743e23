"""The OPTU-8 error policy: each byte of a malformed unit as a private-use character.

Its own module, with no imports, because ``registry.py`` registers it with ``codecs`` on
``import utf8stream``, and that import must not load the decoder's tables.
"""

from __future__ import annotations

__all__ = ["OPTU8", "optu8_errors"]

#: The error policy that maps each byte b of a malformed unit to U+EF00+b and back.
OPTU8 = "optu-8"


def optu8_errors(exc: UnicodeError) -> tuple[str | bytes, int]:
    """The ``optu-8`` error handler, for any codec.

    Decoding: each byte b of the malformed input becomes U+EF00+b (U+EF80..U+EFFF for the
    bytes that are malformed in UTF-8, which are all >= 0x80).  Encoding: characters in
    U+EF00..U+EFFF that the codec cannot encode become the byte they stand for; anything
    else raises.  (UTF-8 can encode U+EF80..U+EFFF, so a UTF-8 codec never asks: use
    ``Utf8Encoder(errors="optu-8")``, which maps them back before encoding.)
    """
    if isinstance(exc, UnicodeDecodeError):
        data = exc.object[exc.start : exc.end]
        return "".join([chr(0xEF00 + b) for b in data]), exc.end
    if isinstance(exc, UnicodeEncodeError):
        chunk = exc.object[exc.start : exc.end]
        if all(0xEF00 <= ord(c) <= 0xEFFF for c in chunk):
            return bytes([ord(c) - 0xEF00 for c in chunk]), exc.end
    raise exc
