"""Damage to a file's bytes, drawn by hypothesis, for the tests that every reader of outside data
ends in success or the project's own error."""

from __future__ import annotations

from hypothesis import strategies as st


def damage_bytes(data: st.DataObject, raw: bytes) -> bytes:
    """Truncate, flip a character, or insert garbage (possibly not UTF-8)."""
    action = data.draw(st.sampled_from(["truncate", "flip", "insert"]))
    at = data.draw(st.integers(0, len(raw)))
    if action == "truncate":
        return raw[:at]
    garbage = data.draw(
        st.binary(min_size=1, max_size=4)
        | st.sampled_from(
            [
                b"{",
                b"}",
                b"[",
                b"]",
                b'"',
                b",",
                b":",
                b"\\",
                b"\n",
                b"\\ud83d",
                b"null",
                b"1e999",
                b"\xff",
                b"\xc3",
                b"\x00",
                b"\r",
                b"\xef\xbb\xbf",
                b"'",
                b"#",
                b"*a",
                b"!!",
            ]
        )
    )
    if action == "flip":
        return raw[:at] + garbage + raw[at + 1 :]
    return raw[:at] + garbage + raw[at:]
