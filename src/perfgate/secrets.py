"""Secrets and every other non-knob variable travel by environment only: recognise them,
mask their values in what perfgate writes, redact them from log text.

Two tests on a variable's name:
- is_secret: a credential by name (HF_TOKEN, WANDB_API_KEY): refused in rows and on the
  command line (export it in the shell);
- is_knob: a performance knob (KNOB_PREFIXES, KNOB_NAMES: NCCL_*, NVTE_*, CUDA_*, ...), the
  variables a run is compared by. Only knobs' values are recorded: in results.json, the
  report, the history, spec.json and the job's pickled context. Any other variable given by
  --env or --env-file reaches the job through the environment of the submitting process, and
  a row's own (from baselines/<gpu>.json) through the job function; its value is shown as ***.

One masking rule (redact) for every text that comes from a job or the command line, wherever
perfgate writes or prints it (results.json, rows.jsonl, the report, JUnit, the terminal, the
history): the values of the environment's credentials; the value of every assignment whose
name is a credential's (secret_name: a word KEY or TOKEN, or SECRET, PASSWORD, PASSWD or
CREDENTIAL anywhere) in its env (`NAME=v`), flag (`--name=v`, `--name v`), JSON (`"name":
"v"`), YAML (`name: v`) and Python (`'name': 'v'`) forms; `Authorization:` and `Bearer`
values; passwords in URLs; private-key blocks; and token shapes (Hugging Face, NGC, GitHub,
GitLab, Slack, AWS access key ids, JWTs, W&B `wandb login` keys).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL)", re.IGNORECASE
)
# Names that hold credentials more often than not (NGC_KEY, DB_PASS, SMTP_PW): never a knob,
# and their values are redacted from log text like secrets'.
_SENSITIVE_NAME = re.compile(
    r"(?:^|_)(?:KEY|PASS|PASSPHRASE|PW|AUTH|COOKIE|CERT|SIGNATURE)(?:_|$)", re.IGNORECASE
)
# Value shapes worth masking even when the name is innocent (e.g. pasted into a log line).
_SECRET_VALUE = re.compile(
    r"(?<![A-Za-z0-9_-])(?:hf_[A-Za-z0-9]{20,}|nvapi-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}|AIza[0-9A-Za-z_-]{35}"
    r"|sk-[A-Za-z0-9_-]{32,}|local-[0-9a-f]{40}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})(?![A-Za-z0-9_-])"
)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S
)
# `Authorization: Bearer x`, `Bearer x`, `wandb login [--relogin] x`: the value that follows.
_AFTER = re.compile(
    r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest)\s+)?"
    r"|\bbearer\s+|\bwandb\s+login\s+(?:--\S+\s+)*)([A-Za-z0-9._~+/=:-]{6,})"
)
_URL_PASSWORD = re.compile(r"(://[^/\s:@]+:)[^/\s@]+(@)")
# name=value, name: value, --name value, "name": "value", 'name': 'value'
_VALUE = r"(?:\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|[^\s'\",;&|)}\]]+)"
# The value is read only after a credential's name (x=API_KEY=v is still found; each name is
# read once, so the scan stays linear in the text).
# A JSON or Python key takes a quoted value (a secret is a string; a bare value after a
# quoted key is prose: `field 'HF_TOKEN': expected ...`); a YAML key has no dot (a dotted
# `spec.env.HF_TOKEN: ...` is perfgate's own "where: what" line, not YAML).
_ASSIGNMENT = re.compile(
    r"(?P<q>[\"'])(?P<qname>[A-Za-z_][\w.-]*)(?P=q)\s*[:=]\s*(?=[\"'])"
    r"|(?<![\w.-])(?P<flag>--?[A-Za-z][\w.-]*)(?:=|[ \t]+(?=[^\s-]))"
    r"|(?<![\w.$-])(?P<name>[A-Za-z_][\w.-]*)[ \t]*=[ \t]*"
    r"|(?<![\w.$-])(?P<yname>[A-Za-z_][\w-]*)[ \t]*:(?!//)[ \t]*"
)
_VALUE_AT = re.compile(_VALUE)
_REFERENCE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\*\*\*")
_SUBSTRINGS = ("SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
_WORDS = frozenset(
    {"KEY", "TOKEN", "PASS", "PW", "PASSPHRASE", "AUTH", "COOKIE", "SIGNATURE", "APIKEY",
     "PRIVATEKEY", "ACCESSKEY", "AUTHKEY", "AUTHTOKEN", "ACCESSTOKEN", "APITOKEN",
     "SESSIONTOKEN", "REFRESHTOKEN"}
)  # fmt: skip
# Words that name a credential only beside another word (DB_PASS, NGC_KEY): alone they are
# a verdict, a dictionary key or a flag.
_ALONE_INNOCENT = frozenset({"KEY", "PASS", "PW", "AUTH", "COOKIE", "SIGNATURE"})
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
MASK = "***"

# Performance knobs: what NVIDIA's performance scripts and the rows of baselines/*.json set
# (NCCL, Transformer Engine, CUDA and its libraries, PyTorch, userbuffers, the OpenMP/MKL
# thread pools, NeMo and Megatron switches, the network stacks under NCCL: UCX, libfabric).
KNOB_PREFIXES = (
    "NCCL_",
    "NVTE_",
    "CUDA_",
    "CUBLAS_",
    "CUBLASLT_",
    "CUDNN_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "PYTORCH_",
    "TRITON_",
    "UB_",
    "NVIDIA_",
    "NVSHMEM_",
    "OMP_",
    "MKL_",
    "TE_",
    "MEGATRON_",
    "NEMO_",
    "UCX_",
    "FI_",
)
KNOB_NAMES = frozenset({"TOKENIZERS_PARALLELISM", "TRANSFORMERS_OFFLINE", "HF_HUB_OFFLINE"})


def is_secret(name: str) -> bool:
    """True for environment variable names that hold credentials."""
    return bool(_SECRET_NAME.search(name))


def secret_name(name: str) -> bool:
    """True for a name whose value is a credential in any form (env, flag, JSON, YAML):
    one of its words is KEY or TOKEN (WANDB_API_KEY, apiKey, access-token; not
    TOKENIZERS_PARALLELISM, tokens_per_s, keyword), or it holds SECRET, PASSWORD, PASSWD or
    CREDENTIAL anywhere (PGPASSWORD, client_secret); never a performance knob."""
    upper = name.upper()
    if any(s in upper for s in _SUBSTRINGS):
        return not is_knob(name.lstrip("-"))
    words = [w.upper() for part in re.split(r"[^A-Za-z0-9]+", name) for w in _WORD.findall(part)]
    if len(words) == 1 and words[0] in _ALONE_INNOCENT:  # `PASS: 3 rows`, `key: model.x`
        return False
    return any(w in _WORDS for w in words) and not is_knob(name.lstrip("-"))


def is_sensitive(name: str) -> bool:
    """True for names of credentials and names that usually hold one (NGC_KEY, DB_PASS)."""
    return is_secret(name) or bool(_SENSITIVE_NAME.search(name))


def is_knob(name: str) -> bool:
    """True for performance knobs, the only variables whose values perfgate records."""
    return name in KNOB_NAMES or (name.startswith(KNOB_PREFIXES) and not is_sensitive(name))


def recorded(env: Mapping[str, str]) -> dict[str, str]:
    """env as perfgate writes it down: knobs' values, MASK for every other variable's."""
    return {k: (str(v) if is_knob(k) else MASK) for k, v in env.items()}


def mask_env_args(args: Sequence[str]) -> list[str]:
    """A command line with the value of every --env NAME=VALUE that is not a knob masked."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg.startswith("--env="):
            out[i] = "--env=" + _masked_assignment(arg.removeprefix("--env="))
        elif arg == "--env" and i + 1 < len(out):
            out[i + 1] = _masked_assignment(out[i + 1])
    return out


def _masked_assignment(item: str) -> str:
    name, sep, _ = item.partition("=")
    return item if not sep or is_knob(name.strip()) else f"{name}={MASK}"


def split_env(env: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Split env into (plain values, names of secrets) so values of secrets are never stored."""
    plain = {k: v for k, v in env.items() if not is_secret(k)}
    return plain, sorted(k for k in env if is_secret(k))


_HIDDEN: set[str] = set()  # names whose values redact() masks too (hide())


def hide(names: Iterable[str]) -> None:
    """Mask these variables' values (from the environment) in log text too (redact)."""
    _HIDDEN.update(names)


def _secret_values(environ: Mapping[str, str] | None, extra: Iterable[str]) -> list[str]:
    """The environment's credential values (and extra), longest first (6 characters or more:
    a shorter value would mask common words)."""
    environ = os.environ if environ is None else environ
    values = {v for k, v in environ.items() if (k in _HIDDEN or is_sensitive(k)) and len(v) >= 6}
    values.update(v for v in extra if v and len(v) >= 6)
    return sorted(values, key=len, reverse=True)


def _mask_assignments(text: str) -> str:
    out, pos = [], 0
    for m in _ASSIGNMENT.finditer(text):
        name = m.group("qname") or m.group("flag") or m.group("name") or m.group("yname")
        if m.start() < pos or not secret_name(name):
            continue
        value = _VALUE_AT.match(text, m.end())
        if value is None:
            continue
        v = value.group()
        if _REFERENCE.fullmatch(v.strip("'\"")):  # `NGC_KEY=$NGC_KEY`: a name, not a value
            continue
        quote = v[0] if len(v) > 1 and v[0] in "'\"" and v[-1] == v[0] else ""
        out.append(text[pos : m.end()] + f"{quote}{MASK}{quote}")
        pos = value.end()
    out.append(text[pos:])
    return "".join(out)


def mask_text(text: str, values: Sequence[str] = ()) -> str:
    """text with the masking rule applied (see the module doc); values: known secrets."""
    for v in values:
        text = text.replace(v, MASK)
    if not text:
        return text
    text = _PRIVATE_KEY.sub(MASK, text)
    text = _AFTER.sub(lambda m: m.group(1) + MASK, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + m.group(2), text)
    text = _mask_assignments(text)
    return _SECRET_VALUE.sub(MASK, text)


def redact(text: str, environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> str:
    """Mask every secret in text: the values of the environment's credential-like variables
    (is_sensitive) and of the variables hide() named, extra values, and the masking rule's
    forms and shapes (module doc)."""
    return mask_text(text, _secret_values(environ, extra))


def mask_tree(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """A JSON-like value with every string masked (redact), and the string value of every
    key that names a credential (secret_name) replaced by MASK: what results.json, the rows
    log, the report and JUnit are written from."""
    values = _secret_values(environ, ())

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return mask_text(v, values)
        if isinstance(v, dict):
            return {
                k: (MASK if isinstance(x, str) and x and secret_name(str(k)) else walk(x))
                for k, x in v.items()
            }
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return v

    return walk(value)
