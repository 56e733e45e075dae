"""Decoding source: the quick path for plain UTF-8 gives what the declared-encoding path gives."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recompile_lint.source import SourceError, decode_declared, decode_source

PIECES = [
    b"x = 1", b"\n", b"\r\n", b"\r", b"# -*- coding: latin-1 -*-", b"# coding=utf-8", b"# vim: set fileencoding=cp1252 :",
    b"\xef\xbb\xbf", b"\xe9", b"\xc3\xa9", b"s = '\xe2\x82\xac'", b"# coding: no-such-codec", b"#!/usr/bin/env python", b"    ", b"coding",
]


def outcome(decode, data: bytes):
    try:
        return "text", decode(data)
    except SourceError as exc:
        return "error", str(exc)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=10).map(b"".join))
def test_the_quick_path_decodes_as_the_declared_path(data: bytes) -> None:
    assert outcome(lambda d: decode_source(d, "m.py"), data) == outcome(decode_declared, data)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"x = 1\r\ny = 2\r", "x = 1\ny = 2\n"),
        (b"\xef\xbb\xbfx = 1\n", "x = 1\n"),
        (b"# coding: latin-1\ns = '\xe9'\n", "# coding: latin-1\ns = '\u00e9'\n"),
        (b"\n\n# coding: latin-1\ns = '\xc3\xa9'\n", "\n\n# coding: latin-1\ns = '\u00e9'\n"),  # a third line declares nothing
    ],
)
def test_encodings_and_newlines(data: bytes, expected: str) -> None:
    assert decode_source(data, "m.py") == expected


def test_undecodable_text_is_an_error_worded_as_before() -> None:
    with pytest.raises(SourceError, match="cannot decode"):
        decode_source(b"s = '\xe9'\n", "m.py")
