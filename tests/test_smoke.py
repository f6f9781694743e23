from utf8stream import Utf8Decoder


def test_decodes_split_character() -> None:
    decoder = Utf8Decoder()
    assert decoder.decode(b"caf\xc3") == "caf"
    assert decoder.decode(b"\xa9", final=True) == "é"
