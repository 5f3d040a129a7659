"""Which store a --history value names, opened: a sqlite file (the embedded default) or a
PostgreSQL database (`postgresql://user@host[:port]/db`, shared by a team).

The password of a PostgreSQL history comes from the environment (PGPASSWORD) or ~/.pgpass,
as libpq reads them: a URL with a password in it (or a `password=` parameter) is refused
before anything connects, so it can reach no command line, log, results.json or report; and
every URL perfgate prints is masked (mask_url) in case one slipped through another way.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from perfgate.charset import printable
from perfgate.errors import ConfigError
from perfgate.history.postgres import PostgresStore
from perfgate.history.sqlite import SqliteStore
from perfgate.history.store import HistoryStore

SCHEMES = ("postgresql", "postgres")
_SECRET_PARAMS = ("password", "passfile", "sslpassword")
_SECRET_PARAM = re.compile(r"((?:^|[?&])(?:" + "|".join(_SECRET_PARAMS) + r")=)[^&]*")


def is_url(value: str | Path) -> bool:
    """True for a PostgreSQL URL (postgresql:// or postgres://)."""
    return isinstance(value, str) and value.split("://", 1)[0].lower() in SCHEMES and "://" in value


def mask_url(value: str) -> str:
    """The URL with any password (user:PASSWORD@, password=...) replaced by ***."""
    value = re.sub(r"(://[^/@:]*:)[^/]*@", r"\1***@", value)
    return _SECRET_PARAM.sub(r"\1***", value)


def check_url(url: str, what: str = "--history") -> str:
    """The URL, after refusing what must not be in it (a password); one line naming it."""
    shown = printable(mask_url(url))
    if any(ord(c) < 32 or ord(c) == 127 for c in url):
        raise ConfigError(f"{what} {shown}: a control character in the URL")
    try:
        parts = urlsplit(url)
        password = parts.password
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
    except ValueError as e:
        raise ConfigError(f"{what} {shown}: not a PostgreSQL URL ({e})") from None
    if password is not None or any(k in params for k in _SECRET_PARAMS):
        raise ConfigError(
            f"{what} {shown}: a password in the URL would be stored and shown with it; give "
            "it by the PGPASSWORD environment variable or ~/.pgpass instead"
        )
    if not parts.path.strip("/"):
        raise ConfigError(f"{what} {shown}: name the database (postgresql://user@host/DB)")
    return url


def open_store(location: str | Path, what: str = "--history") -> HistoryStore:
    """The store a --history value names (a URL: PostgreSQL; anything else: a sqlite file)."""
    if is_url(location):
        url = check_url(str(location), what)
        return PostgresStore(url, mask_url(url))
    return SqliteStore(location)
