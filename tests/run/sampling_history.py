"""The --weval-repeat=auto rule's expected cost over a CI job's life (docs/sampling.md,
'Starting from the history'): analysis for the tests and ``bench/sampling.py``, not for runs."""

from __future__ import annotations

from pytest_weval.run.sampling import HISTORY_RUNS, Expectation, expect


def expect_with_history(q: float, max_samples: int, after: int = 500) -> Expectation:
    """``expect`` for an item run again and again, each run recorded and read by the next: the
    runs' last ``HISTORY_RUNS`` kinds (all samples passed, all failed, or both) are a Markov
    chain, whose distribution after ``after`` recorded runs (from none) weighs the three starts
    (settled on pass, on fail, or not); the default is its stationary one, the long run of a CI
    job. For a two-valued item whose values are both at least ``MARGIN`` from the threshold, as
    in the worked example."""
    starts = {start: expect(q, max_samples, settled=start) for start in (None, True, False)}

    def start_of(state: tuple[str, ...]) -> bool | None:
        return (state[0] == "P") if len(set(state)) == 1 and state[0] != "X" else None

    chain: dict[tuple[str, ...], float] = {("X",) * HISTORY_RUNS: 1.0}  # a new item: no history
    for _ in range(after):  # 500: stationary (it mixes in a few dozen runs)
        following: dict[tuple[str, ...], float] = {}
        for state, prob in chain.items():
            got = starts[start_of(state)]
            for kind, p in (("P", got.all_pass), ("F", got.all_fail), ("X", 1 - got.all_pass - got.all_fail)):
                if p > 0:
                    nxt = (kind, *state[:-1])
                    following[nxt] = following.get(nxt, 0.0) + prob * p
        chain = following
    total = {"samples": 0.0, "passes": 0.0, "all_pass": 0.0, "all_fail": 0.0}
    for state, prob in chain.items():
        got = starts[start_of(state)]
        for name in total:
            total[name] += prob * getattr(got, name)
    return Expectation(q, **total)
