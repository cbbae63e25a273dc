"""Files from outside (study files, corpora, imports) decoded as strict UTF-8, so a bad byte is
reported with its line rather than as a traceback."""

from __future__ import annotations


class NotUtf8(ValueError):
    """The first byte of a file that is not UTF-8: its offset, its 1-based line and its value."""

    def __init__(self, data: bytes, err: UnicodeDecodeError) -> None:
        self.offset = err.start
        self.line = data.count(b"\n", 0, err.start) + 1
        self.byte = data[err.start : err.start + 1]
        super().__init__(f"byte {self.offset} ({self.byte!r}) is not valid UTF-8")


def decode_utf8(data: bytes) -> str:
    """``data`` as text, dropping a leading byte-order mark (spreadsheets write one); raises
    NotUtf8 at the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise NotUtf8(data, err) from None
