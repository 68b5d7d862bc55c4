"""What the source distribution holds (``python -m build --sdist``, as .ci/run builds it): the
package, the README and every docs page it links to, and none of the tests."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _sdist_names(tmp_path: Path) -> set[str]:
    # Built from a copy: building writes an egg-info folder next to the sources.
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", "build", "dist", ".*cache"),
    )
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    (archive,) = out.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        return {name.partition("/")[2] for name in tar.getnames()}


def test_the_sdist_holds_the_docs_the_readme_links_to_and_no_tests(tmp_path: Path) -> None:
    names = _sdist_names(tmp_path)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = {m.group(1) for m in re.finditer(r"\]\((docs/[^)#\s]+)", readme)}
    assert linked, "the README links to docs pages"
    assert linked <= names, sorted(linked - names)
    assert {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")} <= names
    assert "pytest_weval/plugin/__init__.py" in names and "README.md" in names
    assert not [name for name in names if name.startswith("tests/")]


def test_the_readme_install_line_names_no_placeholder() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert not re.search(r"<[^<>\n]*\bURL\b[^<>\n]*>", readme, re.IGNORECASE)
