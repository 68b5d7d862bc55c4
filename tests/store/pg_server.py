"""A throwaway PostgreSQL server for tests and benchmarks, from Debian's ``postgresql`` package
(``apt-get install postgresql``; ``.ci/run`` installs it when missing).

``PostgresServer().start()`` runs ``initdb`` into a new temporary folder and ``pg_ctl start`` on
a free loopback port, its unix socket in that folder; ``stop()`` stops it and removes the
folder. As root (CI, containers) the server runs as the ``postgres`` user the package creates
(``initdb`` refuses root). Two roles: ``postgres`` (trusted, no password) and ``weval``, who
must give a password over TCP (``PASSWORD``), to test ``PGPASSWORD`` and redaction.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PASSWORD = "pw-5f1e2d3c-weval-secret"  # the weval role's: must never show in any output


def find_bin() -> Path | None:
    """The newest installed PostgreSQL's bin folder, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name or 0))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    def __init__(self, bin_dir: Path | None = None):
        self.bin = bin_dir or find_bin()
        if self.bin is None:
            raise FileNotFoundError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
        self.folder = Path(tempfile.mkdtemp(prefix="weval-pg-"))
        self.data = self.folder / "data"
        self.port = 0
        self._options = ""
        self._as_postgres = os.geteuid() == 0

    # -- urls --------------------------------------------------------------------------------
    def url(self, database: str = "weval", user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    # -- life --------------------------------------------------------------------------------
    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin / args[0]), *args[1:]]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, cwd=self.folder, capture_output=True, text=True, check=check, timeout=120)

    def start(self) -> PostgresServer:
        if self._as_postgres:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        # Over TCP the weval role needs its password; everyone else is trusted.
        hba = self.data / "pg_hba.conf"
        hba.write_text(
            "local all all trust\n"
            "host all weval 127.0.0.1/32 scram-sha-256\n"
            "host all all 127.0.0.1/32 trust\n"
            "host all all ::1/128 trust\n"
        )
        for attempt in range(5):
            self.port = free_port()
            options = (
                f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
            )
            self._options = options
            started = self._pg_ctl_start()
            if started.returncode == 0:
                break
            if attempt == 4:
                raise RuntimeError(f"pg_ctl start failed: {started.stdout}{started.stderr}{self.log()}")
            time.sleep(0.2)
        self.sql("postgres", "CREATE DATABASE weval")
        self.sql("postgres", f"CREATE ROLE weval LOGIN PASSWORD '{PASSWORD}'")
        self.sql("postgres", "GRANT ALL ON DATABASE weval TO weval")
        self.sql("weval", "GRANT ALL ON SCHEMA public TO weval")
        return self

    def _pg_ctl_start(self) -> subprocess.CompletedProcess:
        return self._run(
            "pg_ctl", "-D", str(self.data), "-o", self._options, "-l", str(self.folder / "log"), "-w", "start",
            check=False,
        )  # fmt: skip

    def halt(self) -> None:
        """Stop the server (its clients' connections are cut, new ones refused), keeping its data
        and port for ``resume``: an outage."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        """Start a halted server again, on the same port."""
        started = self._pg_ctl_start()
        if started.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed: {started.stdout}{started.stderr}{self.log()}")

    def sql(self, database: str, statement: str) -> str:
        """Run one statement through the unix socket as postgres; its output."""
        done = self._run(
            "psql", "-h", str(self.folder), "-p", str(self.port), "-U", "postgres", "-d", database, "-v",
            "ON_ERROR_STOP=1", "-Atc", statement,
        )  # fmt: skip
        return done.stdout

    def create_database(self, name: str) -> str:
        """A fresh database (one per test that wants its own tables); its URL."""
        self.sql("postgres", f'CREATE DATABASE "{name}"')
        self.sql("postgres", f'GRANT ALL ON DATABASE "{name}" TO weval')
        self.sql(name, "GRANT ALL ON SCHEMA public TO weval")
        return self.url(name)

    def log(self) -> str:
        try:
            return (self.folder / "log").read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.data.exists() and self.port:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
