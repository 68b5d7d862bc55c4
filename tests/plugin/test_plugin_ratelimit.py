"""A throttled provider through pytest: generations and judges wait and every item passes,
serial and under xdist; the terminal says so once and the usage table counts refusals and
waiting; the wait budget and its option."""

from __future__ import annotations

import pytest
from plugin_helpers import JUDGE, JUDGE_ID, MODEL_ID, Project, section, verdict

from tests.fakeserver import RateLimiter, Rule


def _suite(project: Project, prompts: int) -> None:
    lines = [f"models: [{MODEL_ID}]", "---"]
    for n in range(prompts):
        lines += [
            f"- id: p{n}",
            f"  prompt: Question {n}, please answer.",
            "  should:",
            f"    - answers question {n}",
            f"    - $icontains: question {n},",
        ]
    project.write("blueprints/throttled.yml", "\n".join(lines) + "\n")
    project.rules(Rule(model=JUDGE, reply=verdict("CLASS_EXACT")))


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_refusals_of_generations_and_judges_are_waited_out(project: Project, workers: tuple[str, ...]):
    _suite(project, 30)
    # No rate headers, a small burst: the run is refused often at first and must learn the pace.
    project.server.rate_limit = RateLimiter(rate=30, burst=3, headers=None, retry_after="ms")
    project.monkeypatch.setenv("COLUMNS", "160")  # the usage table as columns (at 80: one record per model)
    result = project.run(f"--weval-judges={JUDGE_ID}", "--weval-max-attempts=1", *workers, sub=True)
    result.assert_outcomes(passed=30)
    limiter = project.server.rate_limit
    assert limiter.refused > 0 and limiter.served == 60
    refused_models = {r.model for r in project.requests() if r.outcome == "429-rate"}
    assert refused_models == {"gpt-4o-mini", JUDGE}, refused_models  # generations and judges alike
    out = result.stdout.str()
    assert out.count("openai is rate limiting this run") == 1, out
    usage = section(result.outlines, "weval scores")
    header = next(line for line in usage if line.lstrip().startswith("model") and "refused" in line)
    assert "waited" in header
    total = next(line for line in usage if line.startswith("total"))
    assert total.split()[5] == str(limiter.refused), (total, limiter.refused)


def test_xdist_is_refused_no_more_often_than_serial(project: Project):
    _suite(project, 60)
    counts = {}
    for label, workers in (("serial", ()), ("xdist", ("-n", "2"))):
        project.server.rate_limit = RateLimiter(rate=60, burst=10, headers="openai", retry_after="seconds")
        run = project.run(f"--weval-judges={JUDGE_ID}", f"--weval-cache-dir=cache-{label}", *workers, sub=True)
        run.assert_outcomes(passed=60)
        counts[label] = project.server.rate_limit.refused
    # the first wave goes out before any reply has told the pace; after it, each worker paces
    # at its share of what the headers say
    assert counts["xdist"] <= max(12, 2 * counts["serial"]), counts
    assert counts["xdist"] <= 12, counts  # 10% of 120 served


PAUSE_S = 6  # what the refusal asks for
HEARD_WITHIN_S = 3  # requests on the wire, and the other worker's next read of the claims store


def test_a_pause_holds_back_the_other_worker_too(project: Project):
    _suite(project, 80)
    project.server.latency_ms = 100
    project.rules(
        Rule(model="gpt-4o-mini", contains="Question 0,", fault="429", retry_after=str(PAUSE_S), times=1),
        Rule(model=JUDGE, reply=verdict("CLASS_EXACT")),
    )
    run = project.run(f"--weval-judges={JUDGE_ID}", "-n", "2", "--weval-concurrency=4", sub=True)
    run.assert_outcomes(passed=80)
    requests = project.requests()
    refused_at = next(r.at for r in requests if r.outcome == "429")  # the run's first request
    # The refused worker holds at most 16 items (its claims); a worker that did not pause would
    # send the others' 128 or more requests 2 at a time, 0.1 s each: for 6 s and more, however
    # fast the machine, through the pause. Requests on the wire when the 429 came back, and the
    # other worker's until it reads the pause from the claims store (every 0.1 s), may arrive
    # just after the refusal: a loaded machine gets 3 s for that.
    during = [r for r in requests if refused_at + HEARD_WITHIN_S < r.at < refused_at + PAUSE_S]
    assert during == [], [(round(r.at - refused_at, 2), r.last_user) for r in during]
    # ...and the run still had most of its work to do when the pause began: it was held back.
    after = [r for r in requests if r.at >= refused_at + PAUSE_S]
    assert len(after) >= len(requests) // 2, (len(after), len(requests))


def test_the_wait_budget_and_its_ini_twin(project: Project):
    _suite(project, 1)
    project.rules(Rule(fault="429", retry_after="1"))
    result = project.run(f"--weval-judges={JUDGE_ID}", "--weval-rate-limit-wait=1.5")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "rate limited" in out and "--weval-rate-limit-wait" in out and "1.5 s allowed" in out
    project.ini("weval_rate_limit_wait = 0.5")
    again = project.run(f"--weval-judges={JUDGE_ID}")
    again.assert_outcomes(errors=1)
    assert "0.5 s allowed" in again.stdout.str()
