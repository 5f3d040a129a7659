"""A throwaway PostgreSQL server for the tests (Debian's `postgresql` package: initdb, pg_ctl).

One cluster per test session in a temporary folder, on 127.0.0.1 at a free port and a unix
socket in its folder, with a password (scram-sha-256) for TCP, so the tests connect as a team
would: `postgresql://perfgate@127.0.0.1:PORT/DB` with PGPASSWORD in the environment.
PostgreSQL refuses to run as root: as root, the server runs as the `postgres` user the
package creates, in a folder it owns. `stop()` kills it as a crash would (immediate mode:
no checkpoint, clients cut off) and `start()` brings it back on the same port.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

USER = "perfgate"
PASSWORD = "pg-test-only"  # the throwaway cluster's superuser; given by PGPASSWORD


def find_bin() -> Path | None:
    """The folder of initdb and pg_ctl (Debian keeps them out of PATH), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_version)
    if found:
        return Path(found[-1]).parent
    which = shutil.which("pg_ctl")
    return Path(which).resolve().parent if which else None


def _version(path: str) -> float:
    try:
        return float(Path(path).parts[-3])
    except ValueError:
        return 0.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """One local PostgreSQL cluster, started and stopped by the test session."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="perfgate-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.as_user: str | None = None
        if os.geteuid() == 0:  # postgres will not run as root
            self.as_user = "postgres"
            ids = pwd.getpwnam(self.as_user)
            os.chown(self.root, ids.pw_uid, ids.pw_gid)
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.as_user:
            os.chown(pwfile, pwd.getpwnam(self.as_user).pw_uid, -1)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            USER,
            "--pwfile",
            str(pwfile),
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        pwfile.unlink()

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self.as_user:
            cmd = ["runuser", "-u", self.as_user, "--", *cmd]
        subprocess.run(
            cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120
        )

    def start(self) -> None:
        """Start (or restart) the server and wait until it accepts connections."""
        # fsync off: a killed server keeps what it wrote to the OS (synchronous_commit stays
        # on, or a commit the client saw could be lost with the process, which the tests of
        # "nothing lost" would then blame on perfgate)
        opts = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off -c max_connections=60"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            opts,
            "-l",
            str(self.root / "log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self) -> None:
        """Kill the server as a crash would (clients cut off mid-transaction)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def url(self, db: str = "postgres") -> str:
        """The URL a session gives as --history (no password: PGPASSWORD has it)."""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{db}"

    def create_db(self, name: str) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        with psycopg.connect(self.url(), password=PASSWORD, autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def close(self) -> None:
        """Stop the server (if running) and remove its folder."""
        with contextlib.suppress(subprocess.SubprocessError):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
