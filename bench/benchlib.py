"""What several bench scripts share: the corpus they measure and a judged suite they write."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
# The configs corpus beside the checkout, where the project keeps it; in a plain clone, the
# repository's own example suite (a folder holding blueprints/).
DEFAULT_CORPUS = HERE.parent.parent / "shared" / "corpus" / "weval-configs"
EXAMPLES = HERE.parent / "example_blueprints"

MODEL = "openai:bench-model"
JUDGE = "openai:bench-judge"
JUDGE_REPLY = "<reflection>The text meets it.</reflection><classification>CLASS_EXACT</classification>"


def default_corpus() -> Path:
    if (DEFAULT_CORPUS / "blueprints").is_dir():
        return DEFAULT_CORPUS
    print(f"(no corpus at {DEFAULT_CORPUS}: measuring the example suite; --corpus DIR names another)")
    return EXAMPLES


def write_judged_suite(folder: Path, items: int, name: str, *, points: int = 1, model: str = MODEL) -> None:
    """``folder``/blueprints/``name``.yml: ``items`` prompts of ``points`` judged points each, on ``model``."""
    lines = [f"models: [{model}]", "---"]
    for n in range(items):
        lines += [f"- id: q{n}", f"  prompt: Question {n}, please answer.", "  should:"]
        lines += [f"    - answers question {n}" + (f" (part {k})" if k else "") for k in range(points)]
    path = folder / "blueprints" / f"{name}.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def write_empty_tests(folder: Path, items: int) -> None:
    """``folder``/test_empty.py: ``items`` empty parametrized tests, what pytest itself costs."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_empty.py").write_text(
        f"import pytest\n@pytest.mark.parametrize('i', range({items}))\ndef test_empty(i):\n    pass\n"
    )
    (folder / "pytest.ini").write_text(INI)
