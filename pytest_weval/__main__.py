"""``python -m pytest_weval merge|cache ...`` (``pytest_weval/cli.py``)."""

from pytest_weval.cli import main

raise SystemExit(main())
