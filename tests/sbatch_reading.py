"""How sbatch reads an `#SBATCH` line, written from the documented behaviour of Slurm 22.05.

sbatch splits the text after `#SBATCH` into arguments: whitespace separates them; '...' and
"..." group characters and are removed; a backslash makes the next character literal, even
inside quotes; an unquoted `#` ends the line; a quote still open at the end of the line is a
fatal error. The real sbatch is checked against this reading in
tests/integration/test_hostile_submission.py (values read back from `scontrol show job`).
"""

from __future__ import annotations

C_SPACE = " \t\n\v\f\r"  # isspace() in the C locale: sbatch works on bytes


class Unmatched(ValueError):
    """sbatch: fatal: Unmatched quote."""


def sbatch_arguments(text: str) -> list[str]:
    """The arguments sbatch takes from the text after `#SBATCH` on one line."""
    args: list[str] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in C_SPACE:
            i += 1
        if i >= n:
            return args
        word: list[str] = []
        quote = ""
        escaped = False
        while i < n and (quote or text[i] not in C_SPACE):
            ch = text[i]
            i += 1
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
                continue
            elif quote:
                if ch == quote:
                    quote = ""
                    continue
            elif ch in "'\"":
                quote = ch
                continue
            elif ch == "#":
                return [*args, "".join(word)] if word else args
            word.append(ch)
        if quote:
            raise Unmatched(text)
        if not word:  # sbatch stops at an argument with no characters ('')
            return args
        args.append("".join(word))
