"""What a run's name and its tags may hold: one rule for every front end (the CLI's
``run --name``, ``runs name`` and ``runs tag``, the dashboard's name, rename and tag
fields) and for the store, which refuses what breaks it.

A name is printable text of at most ``NAME_MOST`` characters: it is refused, with the
character and where it stands, if it holds a control character (escape sequences, NUL,
newlines, tabs), an invisible formatting or direction character (U+202E RIGHT-TO-LEFT
OVERRIDE flipped the text after it on Compare; zero-width characters hide what a name
says), a line or paragraph separator, or an unassigned, private-use or surrogate code
point. Spaces at either end are trimmed; nothing else is changed. 80 characters fit on one
line of ``runs list`` and of the run pickers, and were what the dashboard's field held.

A tag follows the same rule, and is shorter and plainer (letters, digits, spaces and
``.:+-/_``, at most ``TAG_MOST``): it is a filter value typed again to remove it.

``shown`` is how any stored name is displayed: one stored before this rule (or written
into the store by hand) has its refused characters escaped (``\\x1b``, ``\\u202e``) and is
cut at ``NAME_MOST`` characters, so that it can neither drive a terminal nor reorder or
forge what is displayed around it.
"""

from __future__ import annotations

import re
import unicodedata

from svmcore.spec.errors import ConfigError

NAME_MOST = 80
TAG_MOST = 40
_REFUSED = {"Cc": "a control character", "Cf": "an invisible formatting or direction character",
            "Zl": "a line separator", "Zp": "a paragraph separator", "Cs": "a surrogate code point",
            "Co": "a private-use character", "Cn": "an unassigned character"}
_TAG = re.compile(r"^[\w][\w .:+\-/]*$")


_CONTROL_NAMES = {0x00: "NUL", 0x07: "BEL", 0x08: "BACKSPACE", 0x09: "TAB", 0x0A: "LINE FEED (a newline)",
                  0x0D: "CARRIAGE RETURN", 0x1B: "ESCAPE", 0x7F: "DELETE"}


def _code(ch: str) -> str:
    name = unicodedata.name(ch, "") or _CONTROL_NAMES.get(ord(ch), "")
    return f"U+{ord(ch):04X}" + (f" {name}" if name else "")


def _check(text: str, what: str, knob: str, most: int) -> str | None:
    """``text`` with the spaces at its ends trimmed (None if nothing is left), or a
    ConfigError naming the first refused character and where it stands."""
    for i, ch in enumerate(text):
        kind = _REFUSED.get(unicodedata.category(ch))
        if kind:
            raise ConfigError(knob, f"{what} cannot hold {kind}: {_code(ch)} at character {i + 1}; "
                                    "use printable text")
    text = text.strip(" ")
    if len(text) > most:
        raise ConfigError(knob, f"{what} has at most {most} characters ({len(text):,} given)")
    return text or None


def check_name(text: str | None) -> str | None:
    """A run's name as stored (None: no name), or ConfigError('name', ...)."""
    return _check(text or "", "a run's name", "name", NAME_MOST)


def check_tag(text: str | None) -> str:
    """A tag as stored, or ConfigError('tag', ...): not empty, at most TAG_MOST
    characters of letters, digits, spaces and ``.:+-/_``."""
    tag = _check(text or "", "a tag", "tag", TAG_MOST)
    if tag is None:
        raise ConfigError("tag", "a tag cannot be empty")
    if not _TAG.match(tag):
        raise ConfigError("tag", f"{tag!r}: use letters, digits, spaces and . : + - / _ only")
    return tag


def _escape(ch: str) -> str:
    if unicodedata.category(ch) not in _REFUSED:
        return ch
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def shown(text: str | None, most: int = NAME_MOST) -> str:
    """A stored name or tag as it may be displayed: refused characters escaped, cut at
    ``most`` characters with an ellipsis."""
    text = "".join(_escape(ch) for ch in (text or ""))
    return text if len(text) <= most else text[:most] + "…"
