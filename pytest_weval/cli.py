"""``python -m pytest_weval``: operations outside a pytest run (no pytest imported here).

    python -m pytest_weval merge OUT_DIR... --out DIR
        combine several --weval-out folders (static shards: pytest-split, -k per CI job) into
        one, the files a single run over all of them writes; conflicting results for one item
        are an error naming it.
    python -m pytest_weval cache stats [--cache-store STORE] [--cache-dir DIR] [--json]
    python -m pytest_weval cache prune --older-than 30d [--cache-store STORE] [--cache-dir DIR] [--dry-run]
        the response cache's size and entries; delete entries older than an age. STORE is
        sqlite (default), files or a postgresql:// URL (password from PGPASSWORD or ~/.pgpass),
        as --weval-cache-store; the folder defaults to .weval_cache. The history of runs stays
        unless --history-keep N is given (then all but the N newest runs go).
    python -m pytest_weval cache check [--cache-store STORE] [--cache-dir DIR] [--json]
    python -m pytest_weval cache repair [--cache-store STORE] [--cache-dir DIR]
        read every entry back (exit 1 when some cannot be read: the cache is damaged); keep every
        entry that can still be read and set the damaged file (or files) aside; check also reads
        the history's records back, and repair drops the damaged ones (on PostgreSQL, repair does
        only that). Run them while no pytest run uses the cache.
    python -m pytest_weval batch list [--all] [--cache-store STORE] [--cache-dir DIR] [--json]
    python -m pytest_weval batch cancel ID|all [--cache-store STORE] [--cache-dir DIR]
        the provider batches recorded in the store (--weval-batch): provider, id, status, lines,
        age; cancel one or every open one at its provider (docs/batch.md).
    python -m pytest_weval history [--cache-store STORE] [--cache-dir DIR] [--model M] [--blueprint B]
                                   [--last N] [--json]
        the runs recorded in the store, oldest first, each model's mean and its change
        (docs/history.md).
    python -m pytest_weval history [--cache-store STORE] [--cache-dir DIR] regressions [--since RUN]
                                   [--min-score-delta X] [--json]
        each prompt and rubric point whose score moved between the last two runs (docs/history.md).
    python -m pytest_weval history [--cache-store STORE] [--cache-dir DIR] pain-points [--min 0.1] [--max 0.5]
                                   [--limit 500] [--json]
        the items of each blueprint's latest run scoring within the window, worst first.
    python -m pytest_weval history [--cache-store STORE] [--cache-dir DIR] deltas [--model M] [--min-peers N]
                                   [--limit N] [--json]
        per prompt of each blueprint's latest run, a model's score against the mean of its peers.

Exit status: 0 done, 1 the operation failed (one line on stderr), 2 a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import difflib
import json
import os
import re
import sys
from collections.abc import Callable, Sequence

import pytest_weval.defaults as defaults
from pytest_weval.engine.batching import cancel_batches, list_batches
from pytest_weval.engine.errors import ModelCallError
from pytest_weval.engine.store.backends import (
    StoreError,
    is_postgres,
    prune_store,
    redact_url,
    repair_store,
    store_health,
    store_stats,
)
from pytest_weval.engine.store.history import history_for
from pytest_weval.report._fmt import fmt_duration, plural
from pytest_weval.report.analyses import (
    MIN_SCORE_DELTA,
    PAIN_LIMIT,
    PAIN_MAX,
    PAIN_MIN,
    delta_lines,
    deltas,
    pain_lines,
    pain_points,
    regression_lines,
    regressions,
)
from pytest_weval.report.finish import merge_outputs
from pytest_weval.report.history import history_rows, history_table
from pytest_weval.report.history_record import ItemRecord, RecordedHistory, RunRecord
from pytest_weval.report.run_record import MergeError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*\Z", re.IGNORECASE)


def parse_age(text: str) -> float:
    """``30d`` -> seconds (units s, m, h, d, w)."""
    match = _AGE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r}: an age is a number and a unit: 90s, 15m, 12h, 30d, 2w")
    return float(match.group(1)) * _UNITS[match.group(2).lower()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_weval", description="pytest-weval's operations outside a pytest run."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    merge = commands.add_parser("merge", help="combine several --weval-out folders into one")
    merge.add_argument("dirs", nargs="+", metavar="OUT_DIR", help="--weval-out folders of the shards")
    merge.add_argument("--out", required=True, metavar="DIR", help="where the merged files go")

    cache = commands.add_parser("cache", help="the response cache: stats, prune, check, repair")
    actions = cache.add_subparsers(dest="action", required=True)
    batch = commands.add_parser("batch", help="provider batches in the store: list, cancel")
    batch_actions = batch.add_subparsers(dest="action", required=True)
    listing = batch_actions.add_parser("list", help="open batches (all with --all), oldest first")
    listing.add_argument("--all", action="store_true", help="ended ones too")
    listing.add_argument("--json", action="store_true", help="print the batches as JSON")
    cancel = batch_actions.add_parser("cancel", help="cancel one open batch, or all, at its provider")
    cancel.add_argument("which", metavar="ID|all", help="a batch id as `batch list` shows it, or all")
    history = commands.add_parser(
        "history", help="the runs recorded in a store, oldest first; regressions, pain-points, deltas"
    )
    history.add_argument("--model", metavar="MODEL", help="only this model's means")
    history.add_argument("--blueprint", metavar="ID_OR_PATH", help="means over this blueprint's items only")
    history.add_argument("--last", type=_count, metavar="N", help="only the N newest runs")
    history.add_argument("--json", action="store_true", help='print {"runs": [...]} as JSON')
    analyses = history.add_subparsers(dest="analysis", required=False, metavar="{regressions,pain-points,deltas}")
    regress = analyses.add_parser("regressions", help="what got worse between the last two runs (or since RUN)")
    regress.add_argument("--since", metavar="RUN", help="compare the newest run with this recorded run")
    regress.add_argument(
        "--min-score-delta", type=float, default=MIN_SCORE_DELTA, metavar="X", help="smallest change reported (0.05)"
    )
    regress.add_argument("--json", action="store_true", dest="analysis_json", help="print the analysis as JSON")
    pain = analyses.add_parser("pain-points", help="items of the latest runs scoring within [--min, --max]")
    pain.add_argument("--min", type=float, default=PAIN_MIN, dest="low", metavar="X", help="lowest score kept (0.1)")
    pain.add_argument("--max", type=float, default=PAIN_MAX, dest="high", metavar="X", help="highest score kept (0.5)")
    pain.add_argument("--limit", type=_count, default=PAIN_LIMIT, metavar="N", help="at most N, worst first (500)")
    pain.add_argument("--json", action="store_true", dest="analysis_json", help="print the analysis as JSON")
    peer = analyses.add_parser("deltas", help="per prompt, each model's score against its peers' mean")
    peer.add_argument("--model", dest="delta_model", metavar="MODEL", help="only this model (its base: gpt-4o)")
    peer.add_argument("--min-peers", type=_count, default=0, metavar="N", help="skip blueprints with fewer peer models")
    peer.add_argument("--limit", type=_count, dest="delta_limit", metavar="N", help="only the N worst")
    peer.add_argument("--json", action="store_true", dest="analysis_json", help="print the analysis as JSON")
    for name, action in (
        ("stats", actions.add_parser("stats", help="entries, size and age")),
        ("prune", actions.add_parser("prune", help="delete replies older than an age, or old runs of the history")),
        ("check", actions.add_parser("check", help="read every entry back: is the cache damaged, what is lost")),
        ("repair", actions.add_parser("repair", help="keep every entry that can be read; set the damaged aside")),
        ("history", history),
        ("list", listing),
        ("cancel", cancel),
    ):
        action.add_argument(
            "--cache-store",
            default=defaults.CACHE_STORE,
            metavar="STORE",
            help="sqlite (default), files or postgresql://user@host:port/database",
        )
        action.add_argument(
            "--cache-dir", default=defaults.CACHE_FOLDER, metavar="DIR", help=f"default {defaults.CACHE_FOLDER}"
        )
        if name in ("stats", "check"):
            action.add_argument("--json", action="store_true", help="print the figures as JSON")
        elif name == "prune":
            action.add_argument("--older-than", type=parse_age, metavar="AGE", help="e.g. 30d, 12h")
            action.add_argument("--dry-run", action="store_true", help="count what would go, delete nothing")
            action.add_argument(
                "--history-keep", type=_count, metavar="N", help="also forget all but the N newest recorded runs"
            )
    return parser


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number of at least 0")
    return value


def _say_damage(history: RecordedHistory) -> None:
    for line in history.damaged:
        print(f"history: {line}", file=sys.stderr)


def _history(store: str, args: argparse.Namespace) -> int:
    history = RecordedHistory(history_for(store, args.cache_dir))
    if not history.exists():
        raise StoreError(f"no cache at {args.cache_dir}")
    runs = history.runs()
    if getattr(args, "analysis", None) == "regressions":
        return _regressions(history, runs, args)
    if getattr(args, "analysis", None) == "deltas":
        rows = deltas(runs, history.items, model=args.delta_model, min_peers=args.min_peers)[: args.delta_limit]
        _say_damage(history)
        if args.json or args.analysis_json:
            print(json.dumps({"minPeers": args.min_peers, "deltas": rows}, indent=2))
        else:
            print("\n".join(delta_lines(rows)))
        return 0
    if getattr(args, "analysis", None) == "pain-points":
        found = pain_points(runs, history.items, low=args.low, high=args.high, limit=args.limit)
        _say_damage(history)
        if args.json or args.analysis_json:
            print(json.dumps({"min": args.low, "max": args.high, "painPoints": found}, indent=2))
        else:
            print("\n".join(pain_lines(found)))
        return 0
    shown = history_rows(runs, history.items, model=args.model, blueprint=args.blueprint, last=args.last)
    _say_damage(history)
    if runs and not shown and (args.model is not None or args.blueprint is not None):
        print(f"history: {_no_match(runs, history.items, args)}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"runs": [row.to_dict() for row in shown]}, indent=2))
    else:
        print("\n".join(history_table(shown)))
    return 0


def _regressions(history: RecordedHistory, runs: list[RunRecord], args: argparse.Namespace) -> int:
    """The newest run against the one before it (or ``--since``): each prompt and point that moved."""
    if len(runs) < 2:
        print(f"history regressions: {len(runs)} run(s) recorded, two are needed to compare", file=sys.stderr)
        return 1
    newer = runs[-1]
    if args.since is None:
        older = runs[-2]
    else:
        matching = [run for run in runs if run.id == args.since]
        if not matching:
            close = difflib.get_close_matches(args.since, [r.id for r in runs], n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            print(f"history regressions: --since {args.since}: no recorded run has that id{hint}", file=sys.stderr)
            return 1
        older = matching[0]
    found = regressions(history.items(older.id), history.items(newer.id), min_delta=args.min_score_delta)
    _say_damage(history)
    if args.json or args.analysis_json:
        body = {"older": older.id, "newer": newer.id, "minScoreDelta": args.min_score_delta} | found
        print(json.dumps(body, indent=2))
    else:
        print("\n".join(regression_lines(found["regressions"], older.id, newer.id)))
    return 0


def _no_match(runs: list[RunRecord], items_of: Callable[[str], list[ItemRecord]], args: argparse.Namespace) -> str:
    """The filter matched none of the recorded runs: say so, with the names it could have meant."""
    if args.model is not None:
        known = sorted({name for run in runs for name in run.figures})
        what, given = "model", args.model
    else:
        names: set[str] = set()
        for run in runs[-20:]:  # the recent runs name the blueprints people mean
            for item in items_of(run.id):
                names.add(item.blueprint)
                if item.detail.blueprint_path:
                    names.add(item.detail.blueprint_path)
        known = sorted(names)
        what, given = "blueprint", args.blueprint
    close = difflib.get_close_matches(given, known, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(close)}?" if close else f"; recorded: {', '.join(known[:10]) or 'none'}"
    return f"--{what} {given}: no recorded run has that {what} ({len(runs)} runs recorded){hint}"


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (`history --json | head`): what it wanted it has; no traceback.
        # stdout is pointed at devnull so that the interpreter's last flush does not fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1


def _main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "merge":
        try:
            written = merge_outputs(args.dirs, args.out)
        except MergeError as exc:
            print(f"merge: {exc}", file=sys.stderr)
            return 1
        print(f"merged {len(args.dirs)} folders into {args.out} ({len(written)} files)")
        return 0

    store = args.cache_store.strip()
    if store.lower() in ("sqlite", "files"):
        store = store.lower()
    try:
        if args.command == "history":
            return _history(store, args)
        if args.command == "batch":
            return _batch(store, args)
        if args.action in ("check", "repair"):
            return _check_or_repair(store, args)
        if args.action == "prune" and args.older_than is None and args.history_keep is None:
            print("cache prune: say what goes: --older-than AGE (replies), --history-keep N (runs)", file=sys.stderr)
            return 2
        if args.action == "stats":
            stats = store_stats(store, args.cache_dir)
            if args.json:
                print(json.dumps(stats.to_dict(), indent=2))
            else:
                print("\n".join(stats.lines()))
            return 0
        removed = None
        if args.older_than is not None:
            removed = prune_store(store, args.cache_dir, args.older_than, dry_run=args.dry_run)
        forgotten = None
        if args.history_keep is not None:
            forgotten = history_for(store, args.cache_dir).prune(args.history_keep, dry_run=args.dry_run)
    except (StoreError, ModelCallError) as exc:
        print(f"{args.command}: {exc}", file=sys.stderr)
        return 1
    where = redact_url(store) if store not in ("sqlite", "files") else f"{store} store in {args.cache_dir}"
    verb = "would remove" if args.dry_run else "removed"
    if removed is not None:
        print(f"{verb} {removed} entr{'y' if removed == 1 else 'ies'} older than {_age(args.older_than)} from {where}")
    if forgotten is not None:
        print(
            f"{verb} {forgotten} recorded run{'' if forgotten == 1 else 's'} from the history of {where} "
            f"(kept the {args.history_keep} newest)"
        )
    return 0


def _batch(store: str, args: argparse.Namespace) -> int:
    if args.action == "cancel":
        cancelled = asyncio.run(cancel_batches(store, args.cache_dir, args.which))
        if not cancelled:
            print(f"batch cancel: no open batch {args.which!r} in the store", file=sys.stderr)
            return 1
        print(f"asked to cancel {len(cancelled)} batch{'es' if len(cancelled) != 1 else ''}: {', '.join(cancelled)}")
        return 0
    rows = asyncio.run(list_batches(store, args.cache_dir, include_ended=args.all))
    if args.json:
        print(json.dumps({"batches": [dataclasses.asdict(row) for row in rows]}, indent=2))
        return 0
    if not rows:
        print("no open batch" if not args.all else "no batch")
        return 0
    print(f"{'provider':<10} {'id':<40} {'status':<22} {'lines':>7} {'waiting':>7} {'failed':>6}  age")
    for row in rows:
        status = row.status if row.provider_status is None else f"{row.status} ({row.provider_status})"
        age = "damaged: its created is not a time" if row.age_s is None else fmt_duration(row.age_s)
        print(f"{row.provider:<10} {row.id:<40} {status:<22} {row.lines:>7} {row.waiting:>7} {row.failed:>6}  {age}")
    return 0


def _check_or_repair(store: str, args: argparse.Namespace) -> int:
    """``cache check``: exit 1 when entries cannot be read; ``cache repair``: keep the others."""
    if args.action == "check":
        health = store_health(store, args.cache_dir)
        if args.json:
            print(json.dumps(dataclasses.asdict(health) | {"damaged": health.damaged}, indent=2))
        else:
            print("\n".join(health.lines()))
        return 1 if health.damaged or _history_damage(store, args.cache_dir) else 0
    if is_postgres(store):  # PostgreSQL checks its own pages: the history's records are all to repair
        fixed = _repair_history(store, args.cache_dir)
        print(f"{redact_url(store)}: {plural(len(fixed), 'damaged history record')} removed")
        return 0
    repaired = repair_store(store, args.cache_dir)
    _repair_history(store, args.cache_dir)  # in the repaired file
    lost = "an unknown number (the file no longer says)" if repaired.lost is None else repaired.lost
    print(
        f"{repaired.store}: kept {repaired.kept} entries, lost {lost} (bought again when next needed); "
        f"the damaged copy: {repaired.damaged_copy}"
    )
    return 0


def _history_damage(store: str, cache_dir: str) -> list[str]:
    """Every damaged record of the history (each run's items read back), said on stderr."""
    try:
        history = history_for(store, cache_dir)
        if history.exists():
            history.items_of([str(run["id"]) for run in history.runs()])
    except StoreError as exc:
        print(f"history: {exc}", file=sys.stderr)
        return [str(exc)]
    for line in history.damaged:
        print(f"history: {line} (`python -m pytest_weval cache repair` removes it)", file=sys.stderr)
    return history.damaged


def _repair_history(store: str, cache_dir: str) -> list[str]:
    """Drop the history's damaged run records (docs/engine.md, 'When the store fails'), each said;
    a history that cannot be repaired is said and leaves the cache's repair done."""
    try:
        history = history_for(store, cache_dir)
        fixed = history.repair() if history.exists() else []
    except StoreError as exc:
        print(f"history: not repaired: {exc}", file=sys.stderr)
        return []
    for line in fixed:
        print(f"history: {line}")
    return fixed


def _age(seconds: float) -> str:
    for unit, size in (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


if __name__ == "__main__":
    raise SystemExit(main())
