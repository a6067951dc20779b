"""Errors that mean "the input is wrong", as opposed to a bug.

Both carry one clear sentence; the CLI prints it on one line and exits 2, the
dashboard shows it next to the field.
"""

import os


class SvmcoreError(Exception):
    """Base class of the errors a user can fix."""


class ConfigError(SvmcoreError, ValueError):
    """A knob value, or a combination of knobs, is not allowed. ``fix``: knob values
    that would be accepted, when there is one obvious fix ({"batch_size": 240})."""

    def __init__(self, knob: str, message: str, fix: dict | None = None):
        self.knob = knob
        self.fix = fix or {}
        super().__init__(f"{knob}: {message}")


class DiskFull(SvmcoreError):
    """What a run writes (a copy of the data, its shards, its files) does not fit on its
    disk. The message names the folder, the space needed and the space free."""


class DataError(SvmcoreError, ValueError):
    """A data file is malformed or unusable. ``line`` is 1-based when known.

    The message names the file by its base name only (it is shown in the browser,
    which must not learn the server's folders); ``path`` keeps the full path and
    ``reason`` the message without the file and line."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        self.reason = message
        where = ""
        if path:
            where = os.path.basename(os.path.normpath(path)) or path
            if line is not None:
                where += f", line {line}"
            where += ": "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)


class DataChangedError(DataError):
    """A data file changed (size, modification time, inode, or its rows) while a run
    read it. The message names the file's base name and what changed."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)  # the message names the file itself
        self.path = path


def first_line(e: BaseException) -> str:
    """An error's message (its type's name if empty) as one line of at most 300 characters."""
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:300]
