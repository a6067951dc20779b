"""ui.messages: untrusted text (exception messages, lines of data files) is shown
as plain text, without the server's paths."""

from __future__ import annotations

import re

import pytest

from ui.messages import escape_markdown, plain, scrub_paths

EVIL = "[x](http://evil.example/) ![i](http://evil.example/i.png)"


def displayed(markdown: str) -> str:
    """What a CommonMark renderer shows for text made only of literals and escapes."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def unescaped(markdown: str, chars: str) -> list[str]:
    """Characters of ``chars`` that appear in ``markdown`` without a backslash before them."""
    return re.findall(r"(?<!\\)(?:\\\\)*([" + re.escape(chars) + "])", markdown)


@pytest.mark.parametrize("text", [
    EVIL,
    "<img src=x onerror=alert(1)> <a href='http://evil.example'>click</a> &amp; &#x3C;",
    "**bold** _it_ `code` ~~gone~~ # heading | table |",
    ":red[colour] :material/home: $x^2$ $$y$$",
    "visit www.evil.example or mail me@evil.example",
    "a \\ backslash \\[ already escaped",
    "https://evil.example/a_b?c=d&e=f",
])
def test_escaped_text_is_displayed_exactly_and_holds_no_active_markup(text):
    out = escape_markdown(text)
    assert displayed(out) == text
    assert not unescaped(out, "[]()!<>&`*_$:~|#@"), out
    assert "www." not in out.lower()  # GFM links bare www. names


def test_link_and_image_syntax_cannot_form():
    out = plain(EVIL)
    assert "](" not in out and "![" not in out
    assert displayed(out) == EVIL


@pytest.mark.parametrize("text,expect", [
    ("/root/x/y.svm, line 2: bad", "y.svm, line 2: bad"),
    ("cannot write /root/.svmcore/runs.db: read-only", "cannot write runs.db: read-only"),
    ("'/tmp/pytest-1/home/uploads/a-1234.svm' is not a file", "'a-1234.svm' is not a file"),
    ("the data folder /srv/lab/home/ is full", "the data folder home is full"),
    ("(see /var/log/x.log)", "(see x.log)"),
])
def test_absolute_paths_are_cut_to_their_base_name(text, expect):
    assert scrub_paths(text) == expect


@pytest.mark.parametrize("text", [
    "cannot reach the Dask scheduler at tcp://127.0.0.1:1: connection refused",
    "http://evil.example/a/b.png",
    "8/16 rows, 300 MiB/s, and/or",
    "a relative path data/x.svm",
    "/single",
])
def test_urls_fractions_and_relative_paths_are_left_alone(text):
    assert scrub_paths(text) == text


def test_plain_scrubs_then_escapes_and_accepts_exceptions():
    from svmcore.spec.errors import DataError

    err = DataError("label '[x](http://evil.example/)' is not a number", "/root/secret/dir/bad.svm", 2)
    assert err.path == "/root/secret/dir/bad.svm"  # the full path stays on the error
    assert "/root" not in str(err)  # the message names the file only
    out = plain(RuntimeError("/root/secret/dir/bad.svm: " + EVIL))
    assert "secret" not in out and "/root" not in out
    assert displayed(out) == "bad.svm: " + EVIL
