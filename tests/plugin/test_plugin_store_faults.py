"""Store faults through real pytest processes (issue 31, item 3): each is one line naming the
store and what to do, never an INTERNALERROR; ``ro`` writes and creates nothing; a damaged
SQLite file is found and counted (at start, or at the first read that fails), and
``python -m pytest_weval cache check|repair`` fix it; a full disk is counted, said at the end,
and stops the sending (a small tmpfs: the container runs as root)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_helpers import MODEL, MODEL_ID, Project, answer_rule, outcomes_by_id

from pytest_weval.engine.stages.store_health import UNSTORED_MAX

DB = "weval-cache.sqlite"


def blueprint(count: int) -> str:
    lines = ["title: Many", f"models: [{MODEL_ID}]", "---"]
    for n in range(count):
        lines += [f"- id: p{n}", f"  prompt: Question {n}?", "  should:", "    - $contains: answer"]
    return "\n".join(lines) + "\n"


def setup(project: Project, count: int = 40, reply_kb: int = 4) -> None:
    project.write("blueprints/many.yml", blueprint(count))
    project.rules(answer_rule("Question", "answer " + "x" * (reply_kb * 1024)))


def record(project: Project, count: int = 40, reply_kb: int = 4) -> Path:
    """A first run that records every reply; returns the SQLite file."""
    setup(project, count, reply_kb)
    project.run(sub=True).assert_outcomes(passed=count)
    project.server.requests.clear()
    return project.path / ".weval_cache" / DB


def one_line_usage_error(result: pytest.RunResult, *words: str) -> str:
    """The run ended before any item, on one ``ERROR:`` line holding ``words``."""
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text, text
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    errors = [line for line in result.errlines + result.outlines if line.startswith("ERROR: ")]
    assert len(errors) == 1, text
    for word in words:
        assert word in errors[0], errors[0]
    return errors[0]


def cli(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_weval", "cache", *args],
        cwd=project.path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def listing(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")} if folder.exists() else {}


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` cannot be written: a read-only bind mount for root (whom permissions do not
    stop), else its mode."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot make a read-only folder here: {mounted.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True, capture_output=True)
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True, capture_output=True)


@contextlib.contextmanager
def small_disk(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``folder`` (root in a container may mount one)."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


# -- faults at start: one line, nothing sent -------------------------------------------------
@pytest.mark.parametrize("store", ["sqlite", "files"])
def test_a_cache_folder_that_is_a_file_is_one_line(project: Project, store: str):
    setup(project)
    project.ini(f"weval_cache_store = {store}")
    (project.path / ".weval_cache").write_text("not a folder")
    result = project.run(sub=True)
    one_line_usage_error(result, "weval cache:", str(project.path / ".weval_cache"), "is a file", "--weval-cache-dir")
    assert not project.requests()


@pytest.mark.parametrize("store", ["sqlite", "files"])
def test_a_cache_folder_that_cannot_be_written_is_one_line(project: Project, store: str):
    setup(project)
    project.ini(f"weval_cache_store = {store}")
    folder = project.path / ".weval_cache"
    folder.mkdir()
    with read_only(folder):
        result = project.run(sub=True)
    one_line_usage_error(result, "weval cache: cannot write", str(folder), "--weval-cache=ro")
    assert not project.requests()


@pytest.mark.parametrize("store", ["sqlite", "files"])
def test_replay_of_a_read_only_store_reads_it_and_writes_nothing(project: Project, store: str):
    project.ini(f"weval_cache_store = {store}")
    record(project)
    folder = project.path / ".weval_cache"
    before = listing(folder)
    with read_only(folder):
        result = project.run("--weval-cache=ro", sub=True)
    result.assert_outcomes(passed=40)
    assert not project.requests()
    assert listing(folder) == before


@pytest.mark.parametrize("store", ["sqlite", "files"])
def test_replay_with_no_cache_creates_none(project: Project, store: str):
    setup(project, count=3)
    project.ini(f"weval_cache_store = {store}")
    result = project.run("--weval-cache=ro", "-n", "2", sub=True)
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(["*never recorded*"])
    assert "INTERNALERROR" not in result.stdout.str()
    assert not (project.path / ".weval_cache").exists()
    assert not project.requests()


def test_replay_writes_nothing_in_a_writable_cache(project: Project):
    """No journal-mode switch, schema, -wal/-shm files or stamp: the folder is as it was."""
    record(project)
    folder = project.path / ".weval_cache"
    before = listing(folder)
    project.run("--weval-cache=ro", "-n", "2", sub=True).assert_outcomes(passed=40)
    assert listing(folder) == before


# -- a damaged SQLite file ---------------------------------------------------------------------
def test_an_overwritten_header_is_one_line_and_repair_reads_the_pages(project: Project):
    """SQLite cannot open the file; its pages still hold every entry (each 4 KB reply runs on
    an overflow page), and repair reads them back without SQLite."""
    path = record(project)
    with open(path, "r+b") as handle:
        handle.write(b"garbage!" * 12)
    result = project.run(sub=True)
    one_line_usage_error(
        result,
        str(path),
        "is damaged (file is not a database): it cannot be opened as a database, and 40 entries can still be read",
        "python -m pytest_weval cache repair --cache-dir",
    )
    assert not project.requests()
    repaired = cli(project, "repair")
    assert repaired.returncode == 0, repaired
    assert "kept 40 entries" in repaired.stdout
    project.run(sub=True).assert_outcomes(passed=40)
    assert not project.requests()


def test_a_truncated_file_is_one_line_and_repair_keeps_what_is_left(project: Project):
    path = record(project)
    os.truncate(path, path.stat().st_size // 2)
    result = project.run(sub=True)
    line = one_line_usage_error(result, str(path), "damaged", "cache repair")
    salvable = int(line.split(" entries can still be read")[0].rsplit(" ", 1)[1])
    assert 0 < salvable < 40, line
    assert not project.requests()
    assert cli(project, "check").returncode == 1
    repaired = cli(project, "repair")
    assert f"kept {salvable} entries" in repaired.stdout, repaired
    project.run(sub=True).assert_outcomes(passed=40)
    assert len(project.requests(MODEL)) == 40 - salvable


def test_an_emptied_cache_is_one_line_and_nothing_is_sent(project: Project):
    """A cache cut to nothing (issue 41, item 4): SQLite would take the empty file for a new
    database, so every reply (and the history) would be bought again in silence."""
    path = record(project)
    os.truncate(path, 0)
    for args in ((), ("--weval-cache=ro",), ("--collect-only",)):
        result = project.run(*args, sub=True)
        if args == ("--collect-only",):  # a dry run sends nothing and leaves the file as it was
            assert path.stat().st_size == 0
            continue
        one_line_usage_error(result, str(path), "empty", "held", "cache repair", "--weval-cache=refresh")
    assert not project.requests()
    assert path.stat().st_size == 0
    check = cli(project, "check")
    assert check.returncode == 1 and check.stdout.count("\n") == 1 and "is empty" in check.stdout, check


@pytest.mark.parametrize("accept", ["repair", "refresh"])
def test_the_loss_of_an_emptied_cache_is_accepted_by_repair_or_refresh(project: Project, accept: str):
    path = record(project)
    os.truncate(path, 0)
    if accept == "repair":
        repaired = cli(project, "repair")
        assert repaired.returncode == 0 and "kept 0 entries" in repaired.stdout, repaired
        assert path.with_name(path.name + ".damaged").exists()
        project.run(sub=True).assert_outcomes(passed=40)
    else:
        project.run("--weval-cache=refresh", sub=True).assert_outcomes(passed=40)
    assert len(project.requests(MODEL)) == 40  # bought again, once
    project.server.requests.clear()
    project.run(sub=True).assert_outcomes(passed=40)  # and the cache works again
    assert not project.requests()


def garble_middle(path: Path) -> None:
    """Garbage over one leaf page of the entries' table (the middle one): some entries are
    lost, the file still opens."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        try:
            leaves = [
                page
                for (page,) in conn.execute(
                    "SELECT pageno FROM dbstat WHERE name = 'responses' AND pagetype = 'leaf' ORDER BY pageno"
                )
            ]
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table to find a page of entries with")
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    assert len(leaves) > 2
    with open(path, "r+b") as handle:
        handle.seek((leaves[len(leaves) // 2] - 1) * size)
        handle.write(os.urandom(size))


def test_garbage_inside_the_file_is_counted_and_repair_keeps_the_rest(project: Project):
    path = record(project, reply_kb=0)
    garble_middle(path)
    result = project.run(sub=True)
    line = one_line_usage_error(result, str(path), "damaged", "cache repair")
    lost = int(line.split(" entries cannot be read")[0].rsplit(": ", 1)[1].split(" of ")[0])
    assert 0 < lost < 40, line
    assert "of 40 entries" in line
    assert not project.requests()

    checked = cli(project, "check")
    assert checked.returncode == 1, checked
    assert f"damaged: {lost} of 40 entries cannot be read" in checked.stdout
    repaired = cli(project, "repair")
    assert repaired.returncode == 0, repaired
    assert f"kept {40 - lost} entries, lost {lost}" in repaired.stdout
    assert (path.parent / (DB + ".damaged")).exists()
    assert cli(project, "check").returncode == 0

    again = project.run(sub=True)
    again.assert_outcomes(passed=40)
    assert len(project.requests(MODEL)) == lost  # only what was lost is bought again
    assert cli(project, "check").stdout.startswith(f".weval_cache/{DB}: sound, 40 entries")


def test_damage_the_start_did_not_see_is_said_at_the_first_read_that_fails(project: Project):
    """The file looks as the last clean run left it (same size and time), so it is not checked at
    start; the reads that fail say so at once and at the end, with the fix, and the next run
    checks it again."""
    path = record(project, reply_kb=0)
    stat = path.stat()
    garble_middle(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    result = project.run(sub=True)
    text = result.stdout.str()
    assert "INTERNALERROR" not in text
    bought = len(project.requests(MODEL))
    assert 0 < bought < 40
    # A reply bought again goes where the damage is, so storing it may fail too; then no request
    # is sent after that, and which of the unreadable entries were read before depends on timing.
    stopped = f"weval: the cache at {path} could not store replies (damaged), so no request was sent after that" in text
    unreadable = f"{bought} cache entries could not be read" if not stopped else "* cache entries could not be read"
    result.stdout.fnmatch_lines(
        [
            f"weval: the cache at {path} is damaged (*): its unreadable entries are bought again; after the run, "
            "python -m pytest_weval cache repair --cache-dir * keeps every entry it can still read",
            f"weval: {unreadable}, the cache at {path} is damaged (*): they were bought "
            f"again{' until no request was sent' if stopped else ''}; python -m pytest_weval cache repair "
            "--cache-dir * keeps every entry it can still read",
        ]
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("errors", 0) == 40
    if outcomes.get("errors"):  # only items the stop kept from being sent
        assert stopped and "not sent: the cache at" in text
    one_line_usage_error(project.run(sub=True), "damaged", "cache repair")


# -- a full disk -------------------------------------------------------------------------------
@pytest.mark.parametrize("store", ["sqlite", "files"])
@pytest.mark.parametrize("workers", [0, 2])
def test_a_full_disk_is_counted_said_and_stops_the_sending(project: Project, store: str, workers: int):
    setup(project, count=120, reply_kb=8)
    project.ini(f"weval_cache_store = {store}")
    concurrency = 2
    with small_disk(project.path / "disk", "256k") as disk:
        cache = disk / "cache"
        args = [f"--weval-cache-dir={cache}", f"--weval-concurrency={concurrency}", "-n", str(workers)]
        result = project.run(*args, sub=True)
        text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "internal error" not in text and "Traceback" not in text, text[-3000:]
    assert len(text) < 400_000  # one line per item at most, no store traceback per item
    # A claim that cannot be released or a result that cannot be published is said once per
    # process (issue 41, item 6: ~100 such lines under -n 2 before).
    repeated = [line for line in text.splitlines() if "could not release" in line or "could not publish" in line]
    assert len(repeated) <= 2 * max(1, workers), repeated
    where = str(cache / DB) if store == "sqlite" else str(cache)
    sent = len(project.requests(MODEL))
    assert sent < 100, "the run went on sending after the disk was full"
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) >= 120 - sent
    result.stdout.fnmatch_lines(
        [
            f"weval: the cache at {where} cannot store replies (disk full): no new request is sent*",
            "*not sent: the cache at * cannot store replies (disk full)*",
            f"weval: the cache at {where} could not store replies (disk full), so no request was sent after that; "
            "free space, or run with --weval-cache=off",
        ]
    )
    said = [line for line in result.outlines if "cannot store replies (disk full): no new request" in line]
    assert len(said) == 1, said
    # The replies that arrived and could not be kept (none, when a claim was the first write to
    # fail): in each process, those waiting for their write when one first failed, and those on
    # the wire (up to 98 before, whenever the store's thread fell behind).
    lost = [line for line in result.outlines if "could not be stored" in line]
    assert len(lost) <= 1, lost
    for line in lost:
        assert line.endswith(f"could not be stored: disk full at {where}; the next run will buy them again")
        assert int(line.split()[1]) <= max(1, workers) * (UNSTORED_MAX + concurrency), line


@dataclasses.dataclass
class Hold:
    """What the server had received when another process took the cache's write lock, and when
    it let go."""

    at_lock: int = -1
    at_release: int = -1


def hold_the_store_and_fill_the_disk(
    project: Project, db: Path, disk: Path, hold: Hold, ended: threading.Event
) -> None:
    """Once the run is sending, take the SQLite write lock of ``db`` from this process, as a
    second run on the cache would, fill ``disk``, and let go once the sending stood still for
    a second (or every request was sent)."""
    while len(project.requests(MODEL)) < 5:  # the claims are taken: only replies wait for the lock
        if ended.is_set():
            return
        time.sleep(0.001)
    conn = sqlite3.connect(db, timeout=30, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        hold.at_lock = len(project.requests(MODEL))
        with contextlib.suppress(OSError), (disk / "filler").open("wb", buffering=0) as filler:
            while True:
                filler.write(b"x" * 4096)
        sent, still_since = hold.at_lock, time.monotonic()
        while sent < 120 and time.monotonic() - still_since < 1.0:
            time.sleep(0.01)
            if len(project.requests(MODEL)) != sent:
                sent, still_since = len(project.requests(MODEL)), time.monotonic()
        hold.at_release = len(project.requests(MODEL))
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def test_replies_that_wait_for_their_write_hold_the_sending_back(project: Project):
    """A full disk shows only when a write fails. While the replies wait for theirs (another
    process holds the cache's write lock, or the store's thread is short of the CPU), nobody
    knows whether the store can keep them: the sending waits once a few do, rather than buying
    every reply of the run blind (all 120 here before, each lost on the disk filled meanwhile)."""
    setup(project, count=120, reply_kb=8)
    concurrency = 2
    with small_disk(project.path / "disk", "1m") as disk:
        cache = disk / "cache"
        hold, ended = Hold(), threading.Event()
        holder = threading.Thread(
            target=hold_the_store_and_fill_the_disk, args=(project, cache / DB, disk, hold, ended)
        )
        holder.start()
        args = [f"--weval-cache-dir={cache}", f"--weval-concurrency={concurrency}"]
        try:
            result = project.run(*args, sub=True)
        finally:
            ended.set()
            holder.join()
    text = result.stdout.str() + result.stderr.str()
    assert 0 < hold.at_lock <= hold.at_release, (hold, text[-3000:])
    sent = len(project.requests(MODEL))
    # The replies already waiting for their write, and those on the wire, are all that is bought
    # once nothing more can be stored.
    assert sent <= hold.at_lock + UNSTORED_MAX + concurrency, (hold, sent)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("errors", 0) == 120, text[-3000:]
    assert outcomes.get("errors", 0) >= 120 - sent
    result.stdout.fnmatch_lines(
        [
            f"weval: the cache at {cache / DB} cannot store replies (disk full): no new request is sent*",
            f"weval: the cache at {cache / DB} could not store replies (disk full), so no request was sent after that*",
        ]
    )


def test_without_a_cache_a_full_disk_stops_nothing(project: Project):
    setup(project, count=30, reply_kb=8)
    with small_disk(project.path / "disk", "64k") as disk:
        result = project.run(f"--weval-cache-dir={disk / 'cache'}", "--weval-cache=off", sub=True)
    result.assert_outcomes(passed=30)
    assert "could not be stored" not in result.stdout.str()


def test_under_xdist_every_reply_bought_on_a_full_disk_scores_its_item(project: Project):
    """Issue 41, item 6: a worker evaluates items ahead that xdist may give the other worker to
    report; once the disk is full it can neither publish their results nor release their claims,
    and the other worker reported them as 'not sent' errors although their replies had been
    bought (5-24 items in every run of this size before the handover). Eight requests in flight
    per worker when the disk fills make that certain."""
    setup(project, count=120, reply_kb=2)
    with small_disk(project.path / "disk", "512k") as disk:
        args = [f"--weval-cache-dir={disk / 'cache'}", "--weval-concurrency=8", "-n", "2", "-rA"]
        result = project.run(*args, sub=True)
    bought = {request.last_user for request in project.requests(MODEL)}
    assert 0 < len(bought) < 120
    outcomes = outcomes_by_id(result)
    assert len(outcomes) == 120, result.stdout.str()[-3000:]
    for n in range(120):
        outcome = outcomes[f"blueprints/many.yml::p{n}[{MODEL_ID}]"]
        assert outcome == ("PASSED" if f"Question {n}?" in bought else "ERROR"), (n, outcome)


def test_a_cache_with_nothing_readable_is_set_aside_by_the_repair_its_check_advises(project: Project):
    """Issue 41: ``cache check`` (and the run's line) advised ``cache repair`` for a file with not
    one readable entry, and ``cache repair`` then refused ("no entry can be read")."""
    path = record(project, count=10)
    path.write_bytes(os.urandom(path.stat().st_size))
    line = one_line_usage_error(project.run(sub=True), str(path), "0 entries can still be read", "cache repair")
    assert "keeps them" not in line and "sets the damaged file aside" in line, line
    checked = cli(project, "check")
    assert checked.returncode == 1, checked
    assert "cache repair" in checked.stdout and "sets what cannot be read aside" in checked.stdout, checked
    assert "keeps" not in checked.stdout, checked
    repaired = cli(project, "repair")
    assert repaired.returncode == 0, repaired
    assert "kept 0 entries" in repaired.stdout
    assert path.with_name(path.name + ".damaged").exists()
    project.run(sub=True).assert_outcomes(passed=10)
    assert len(project.requests(MODEL)) == 10  # bought again, once
