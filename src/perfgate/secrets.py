"""Secrets (HF_TOKEN and the like) travel by environment only: recognise and redact them."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL)", re.IGNORECASE
)
# Value shapes worth masking even when the name is innocent (e.g. pasted into a log line).
_SECRET_VALUE = re.compile(
    r"\b(hf_[A-Za-z0-9]{20,}|nvapi-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,})\b"
)
MASK = "***"


def is_secret(name: str) -> bool:
    """True for environment variable names that hold credentials."""
    return bool(_SECRET_NAME.search(name))


def split_env(env: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Split env into (plain values, names of secrets) so values of secrets are never stored."""
    plain = {k: v for k, v in env.items() if not is_secret(k)}
    return plain, sorted(k for k in env if is_secret(k))


def redact(text: str, environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> str:
    """Mask every secret value found in the environment, known token shapes and extra values."""
    environ = os.environ if environ is None else environ
    values = {v for k, v in environ.items() if is_secret(k) and len(v) >= 6}
    values.update(v for v in extra if v and len(v) >= 6)
    for v in sorted(values, key=len, reverse=True):
        text = text.replace(v, MASK)
    return _SECRET_VALUE.sub(MASK, text)
