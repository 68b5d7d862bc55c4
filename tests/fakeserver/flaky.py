"""The flaky stand-in model of docs/sampling.md, for the tests and ``bench/sampling.py``.

120 items of two ``$contains`` points each, threshold 0.75: a quarter always answer both terms
(score 1), a quarter leave one out 20% of the time (true mean 0.9: should pass), a quarter 80% of
the time (true mean 0.6: should fail), a quarter always (0.5). A sample scores 1 or 0.5, so it
passes its threshold exactly when it has both terms.
"""

from __future__ import annotations

from tests.fakeserver.server import Rule

MODEL = "openai:gpt-flaky"
GROUPS = {"steady": 0.0, "p20": 0.2, "p80": 0.8, "wrong": 1.0}  # how often the term is left out
SHOULD_PASS = frozenset({"steady", "p20"})


def workload_blueprint(per_group: int = 30) -> str:
    lines = [f"models: [{MODEL}]", "threshold: 0.75", "---"]
    for group in GROUPS:
        for n in range(per_group):
            lines += [
                f"- id: {group}-{n}",
                f"  prompt: Say alpha and beta. ({group}-{n})",
                "  should:",
                "    - $contains: alpha",
                "    - $contains: beta",
            ]
    return "\n".join(lines) + "\n"


def flaky_rules(seed: int) -> list[Rule]:
    """Another seed is another run of the same model."""
    return [
        Rule(
            model=MODEL.split(":", 1)[1],
            contains=f"({group}-",
            reply="alpha beta",
            flaky_term="beta",
            flaky_rate=rate,
            flaky_seed=seed,
        )
        for group, rate in GROUPS.items()
    ]


def should_pass(prompt_id: str) -> bool:
    return prompt_id.split("-")[0] in SHOULD_PASS


def wrong_outcomes(outcomes: dict[str, str]) -> int:
    """How many items' outcomes (prompt id -> passed/failed) are not what their true mean says."""
    return sum((outcome == "passed") != should_pass(pid) for pid, outcome in outcomes.items())
