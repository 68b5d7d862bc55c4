"""Loading the plugin (which pytest does at every start, whatever it runs) leaves out the
libraries only some runs need: aiohttp until a request is sent, V8 until JavaScript runs,
psycopg without a PostgreSQL store, the price table until a reply is priced."""

from __future__ import annotations

import json
import subprocess
import sys

LOADED_ON_USE = ("aiohttp", "httpx_aiohttp", "py_mini_racer", "psycopg", "genai_prices")


def test_loading_the_plugin_leaves_out_what_only_some_runs_need() -> None:
    # A fresh interpreter: this one has loaded them all for other tests.
    code = (
        "import json, sys, pytest, pytest_weval.plugin; "
        f"print(json.dumps([m for m in {LOADED_ON_USE!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []
