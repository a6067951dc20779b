"""A Dask scheduler's address: the form the product supports (``tcp://HOST:PORT``, or
``HOST:PORT``, which Dask reads as tcp) and whether anything listens there.

Dask itself accepts more schemes (inproc, ucx, ws, tls), none of which a run here can use
(no TLS credentials are configured, inproc is another process's memory), and answers a
closed port only after its connect timeout with "Timed out": one TCP connection says at
once that nothing listens.
"""

from __future__ import annotations

import re

_FORM = re.compile(r"^(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://)?(?P<host>\[[^\]]*\]|[^\s:/\[\]]*)"
                   r"(?::(?P<port>[^/]*))?/?$")
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.\-]*[A-Za-z0-9])?)$")


def _shown(text: str, limit: int = 80) -> str:
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"… ({len(text):,} characters)"


def parse_address(address: str) -> tuple[str, int]:
    """(host, port) of a supported scheduler address, or ValueError with one sentence
    naming what is wrong."""
    text = address.strip()
    if not text:
        raise ValueError("the address is empty (expected tcp://HOST:PORT, e.g. tcp://127.0.0.1:8786)")
    m = _FORM.match(text)
    if not m:
        raise ValueError(f"{_shown(text)} is not a Dask scheduler address (expected tcp://HOST:PORT)")
    scheme, host, port = m.group("scheme"), m.group("host"), m.group("port")
    if scheme is not None and scheme.lower() != "tcp":
        raise ValueError(f"{scheme}:// is not supported: a run connects to a Dask scheduler over plain tcp "
                         "(expected tcp://HOST:PORT)")
    if not host or not _HOST.match(host):
        raise ValueError(f"{_shown(text)} has no valid host name (expected tcp://HOST:PORT)")
    if port is None or port == "":
        raise ValueError(f"{_shown(text)} has no port (expected tcp://HOST:PORT; a scheduler listens on 8786 by default)")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"port {_shown(port)} of {_shown(text)} is not a port number (1 to 65535)")
    return host.strip("[]"), int(port)


def unreachable_reason(host: str, port: int, timeout_s: float) -> str | None:
    """Why nothing answers on HOST:PORT (one TCP connection), or None when something listens."""
    import socket  # here, not at the top: the lean worker imports this module (through spec.config)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except ConnectionRefusedError:
        return f"connection refused: nothing listens on {host}:{port} (is a scheduler running there?)"
    except socket.gaierror:
        return f"unknown host {host}"
    except TimeoutError:
        return f"no answer from {host}:{port} within {timeout_s:.0f} s"
    except OSError as e:
        return e.strerror or str(e)
