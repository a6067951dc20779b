"""User-facing error text, shown as plain text.

Error messages quote what the user gave: knob values, lines of their data files.
``st.error`` and friends render Markdown, so a data line holding
``[x](http://evil)`` or ``![](http://evil/img)`` would become a live link or an
image fetched by the browser. Every error or warning built from exception text or
file content goes through :func:`show_error` (or :func:`plain` where the text is
part of a larger message), which

* scrubs absolute server paths down to their base name (``/root/x/y.svm`` ->
  ``y.svm``): the browser must not learn the server's folders (a second line of
  defence; ``DataError`` already names files by their base name), and
* escapes every character Markdown, Streamlit's directives (``:red[...]``), LaTeX
  (``$``) or HTML could act on, so the text is shown exactly as written.
"""

from __future__ import annotations

import re

import streamlit as st

# ASCII punctuation that starts a Markdown, GFM, Streamlit-directive, math or HTML
# construct. CommonMark lets any ASCII punctuation be backslash-escaped, and an
# escaped character is always literal text.
_SPECIAL = frozenset("\\`*_{}[]()<>#+!|~:$&@")
# GFM turns bare "www.example.com" into a link even with no scheme: break the "www."
_WWW = re.compile(r"(?i)\b(www)\.")
# An absolute path of two or more parts; not the "//" of a URL, nor "a/b" inside a word.
_SEG = r"[^\s/'\"`<>|;:,()\[\]{}]+"
_ABS_PATH = re.compile(rf"(?<![\w.:/~\\-])(?:/{_SEG})+/({_SEG})?")

KINDS = ("error", "warning", "info")


def scrub_paths(text: str) -> str:
    """Absolute paths replaced by their last part: '/root/x/y.svm' -> 'y.svm'."""
    def last(m: re.Match) -> str:
        return m.group(1) or m.group(0).rstrip("/").rsplit("/", 1)[-1]

    return _ABS_PATH.sub(last, text)


def escape_markdown(text: str) -> str:
    """``text`` with every Markdown/HTML special character backslash-escaped."""
    out = "".join("\\" + c if c in _SPECIAL else c for c in text)
    return _WWW.sub(r"\1\\.", out)


def html_text(text: str) -> str:
    """``text`` for Markdown that also holds the app's own HTML: every HTML or Markdown
    special character as a numeric character reference, which Markdown shows as that
    character and never reads as emphasis or a tag (``__init__.svm`` stays as written)."""
    return "".join(f"&#{ord(c)};" if c in _SPECIAL or c in "\"'" else c for c in str(text))


def plain(error_or_text: BaseException | str) -> str:
    """The text of an error (or any untrusted text), safe to embed in Markdown:
    server paths scrubbed, then every special character escaped."""
    return escape_markdown(scrub_paths(str(error_or_text)))


def show_error(error_or_text: BaseException | str, kind: str = "error", prefix: str = "") -> None:
    """Show an error, warning or info box whose text is displayed as plain text.
    ``prefix`` is trusted Markdown written by the app (e.g. ``**Run 3 failed**: ``)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    getattr(st, kind)(prefix + plain(error_or_text))


SCROLL_JS = """<script>(() => {{
  let tries = 0;
  const find = () => {{
    const el = document.querySelector('.st-key-{key}');
    if (el) el.scrollIntoView({{block: 'start', behavior: 'instant'}});
    else if (tries++ < 50) setTimeout(find, 100);
  }};
  find();
}})();</script>"""


def scroll_into_view(key: str) -> None:
    """Scroll the page so that the element with this key is at the top of the window (a
    result that appears above where the user was looking)."""
    if not key.replace("_", "").isalnum():
        raise ValueError(f"not a widget key: {key!r}")
    st.html(SCROLL_JS.format(key=key), unsafe_allow_javascript=True)
