"""``--weval-min-score``: which blueprints and folders average below the bar.

The plugin fails the session when this returns any line. Means are the roll-up's
prompt-weighted means over scored items; a blueprint with nothing scored (every item errored)
is not judged here, since its errors already fail the run.
"""

from __future__ import annotations

from pytest_weval.report._fmt import fmt_compare
from pytest_weval.report.rollup import ROOT, Rollup, Tally


def _line(kind: str, name: str, tally: Tally, min_score: float, model: str | None = None) -> str:
    assert tally.mean is not None  # only tallies with a mean below the bar get a line
    mean, bound = fmt_compare(tally.mean, min_score)
    on = f" on {model}" if model else ""
    return f"{kind} {name}{on} mean {mean} < {bound} ({tally.scored} scored items)"


def check_min_score(rollup: Rollup, min_score: float, *, per_model: bool = False) -> list[str]:
    """Lines like ``blueprint safety/triage.yml mean 0.42 < 0.50``; empty when all pass.

    Blueprints come first, then folders (the run as a whole is not a folder here: it cannot
    fall below the bar unless some blueprint does). ``per_model`` also holds every
    blueprint x model mean to the bar.
    """
    lines: list[str] = []
    for path, bp in rollup.blueprints.items():
        if bp.overall.mean is not None and bp.overall.mean < min_score:
            lines.append(_line("blueprint", path, bp.overall, min_score))
        if per_model:
            for model, tally in bp.by_model.items():
                if tally.mean is not None and tally.mean < min_score:
                    lines.append(_line("blueprint", path, tally, min_score, model))
    for path, folder in rollup.folders.items():
        if path == ROOT:
            continue
        if folder.overall.mean is not None and folder.overall.mean < min_score:
            lines.append(_line("folder", path + "/", folder.overall, min_score))
    return lines
