"""The location of the embedding and contextual caches (CHUNKBENCH_CACHE_URL): a ``postgresql://`` URL for one
cache many workers share, or a path for the SQLite files of one machine.

Read and checked with the settings, where the variable is read (chunkbench_core/settings.py), so it imports nothing
but the errors and the redaction of secrets; the PostgreSQL caches (storage/cache_postgres.py) connect with what it
parsed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from chunkbench_core.errors import ConfigError
from chunkbench_core.redaction import REDACTED, redact

SCHEMES: tuple[str, ...] = ("postgresql", "postgres")
URL_FORM = "postgresql://USER:PASSWORD@HOST:5432/DATABASE"


class CacheURLError(ConfigError):
    """A cache URL or location that cannot be used (the message never holds the password)."""


@dataclass(frozen=True)
class CacheURL:
    """A validated ``postgresql://`` cache URL; ``redacted`` is the form to show (no password).

    ``options`` are the libpq connection parameters parsed from it (host, port, user, password, dbname and
    the query's options): the driver gets exactly what was validated here, never a string to re-parse.
    """

    url: str = field(repr=False)
    redacted: str
    database: str
    options: dict[str, str] = field(repr=False, compare=False)

    @property
    def password(self) -> str | None:
        return self.options.get("password") or None

    def __str__(self) -> str:
        return self.redacted


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):(//)?")  # two letters at least: "C:" starts a Windows path


def redact_url(text: str) -> str:
    """``text`` with the password of a ``scheme://user:password@host`` URL, and any ``password=``, masked."""
    match = _SCHEME.match(text)
    head, rest = (text[: match.end()], text[match.end() :]) if match else ("", text)
    if "@" in rest:
        userinfo, _, host = rest.rpartition("@")  # a password may hold '@' or '/' when not percent-encoded
        user, colon, _ = userinfo.partition(":")
        if colon:
            rest = f"{user}:{REDACTED}@{host}"
    return redact(head + rest)


def parse_cache_url(url: str) -> CacheURL:
    """Validate a ``postgresql://`` (or ``postgres://``) URL; CacheURLError says what is wrong and how it should look."""
    text = str(url).strip()
    shown = redact_url(text)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise CacheURLError(
            f"cache URL {shown!r}: unsupported scheme {parts.scheme!r}; use {URL_FORM} for a cache that many "
            "workers share, or a path (or nothing) for the SQLite files of one machine"
        )
    if not text.lower().startswith(f"{scheme}://"):
        raise CacheURLError(f"cache URL {shown!r}: expected {URL_FORM}")
    if "@" in parts.path or "@" in parts.query or "@" in parts.fragment:
        # the user name or password holds '/', '?' or '#': not echoed, the tail is part of the password
        raise CacheURLError(
            f"cache URL {shown!r}: the password (or user name) holds '/', '?', '#' or '@' that are not "
            f"percent-encoded (write %2F, %3F, %23, %40); expected {URL_FORM}"
        )
    try:
        port = parts.port
    except ValueError:
        raise CacheURLError(
            f"cache URL {shown!r}: the port is not a number from 0 to 65535; expected {URL_FORM}"
        ) from None
    try:
        query = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        raise CacheURLError(
            f"cache URL {shown!r}: the part after '?' is not name=value&name=value; expected {URL_FORM}"
        ) from None
    options = {name: value for name, value in query}
    database = unquote(parts.path[1:]) if parts.path.startswith("/") else ""
    database = database or options.get("dbname", "")
    if not database:
        raise CacheURLError(f"cache URL {shown!r} names no database; expected {URL_FORM}")
    if "/" in database:
        raise CacheURLError(f"cache URL {shown!r}: a database name holds no '/'; expected {URL_FORM}")
    if parts.hostname:
        options["host"] = parts.hostname
    if port is not None:
        options["port"] = str(port)
    if parts.username:
        options["user"] = unquote(parts.username)
    if parts.password is not None:
        options["password"] = unquote(parts.password)
    options["dbname"] = database
    return CacheURL(url=text, redacted=shown, database=database, options=options)


def cache_location(location: str | os.PathLike[str] | CacheURL | None) -> CacheURL | Path | None:
    """What a cache setting names: a PostgreSQL URL, a SQLite file or folder (a path), or None (unset)."""
    if location is None or isinstance(location, CacheURL):
        return location
    if isinstance(location, os.PathLike):
        return Path(location).expanduser()
    text = str(location).strip()
    if not text:
        return None
    if "://" in text or _SCHEME.match(text):
        return parse_cache_url(text)
    return Path(text).expanduser()
