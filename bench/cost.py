"""What a judged workload is billed, live and through the providers' cheaper ways (issue 45):
prompt caching, the flex tier, batch APIs, and batch with caching; then the corpus plan's list
price beside its expected billed price.

    python bench/cost.py [--items 12] [--points 3] [--answer-words 1300] [--corpus DIR]

The workload (bench/benchlib.py ``write_judged_suite``): ``--items`` prompts of ``--points``
judged points each, answered by openai:gpt-5-mini in ~``--answer-words`` tokens, each answer
judged by one judge (both judges below in turn). The stand-in is the fake provider server, which
reports cached tokens as the providers would (tests/fakeserver/caching.py ``by_prefix``: OpenAI
and Gemini cache any prompt of 1,024 tokens or more by themselves; Anthropic only the prefix a
request marks) and answers at the service tier asked for. Each run is a fresh pytest process with
a fresh cache; its billed cost is summary.json's (each reply priced from its own usage through
genai-prices), and beside it the list price of the same tokens (every prompt token at the input
rate: what the run reported before the billed price).

The corpus plan: ``pytest --collect-only --weval-out=DIR`` over ``--corpus`` with
``--weval-models`` and ``--weval-judges`` below: its requests, the list-price range and the
prompt-cached figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import genai_prices

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchlib import default_corpus, write_judged_suite  # noqa: E402

from tests.fakeserver import FakeServer, Rule  # noqa: E402

MODEL = "openai:gpt-5-mini"
JUDGES = ("anthropic:claude-sonnet-4-5", "openai:gpt-5-mini")
VERDICT = "<reflection>The text meets it.</reflection><classification>CLASS_EXACT</classification>"
RUNS = (
    ("live", ("--weval-prompt-cache=off",)),
    ("cached", ()),
    ("flex", ("--weval-prompt-cache=off", "--weval-service-tier=flex")),
    ("flex+cached", ("--weval-service-tier=flex",)),
    ("batch", ("--weval-prompt-cache=off", "--weval-batch=wait")),
    ("batch+cached", ("--weval-batch=wait",)),
)
PLAN_MODELS = "openai:gpt-5-mini,anthropic:claude-haiku-4-5"
PLAN_JUDGES = "openai:gpt-5-mini,anthropic:claude-haiku-4-5"


def list_price(sent: list[dict]) -> float:
    """Every reply's tokens at list price: all prompt tokens at the input rate, at the default tier."""
    total = 0.0
    for body in sent:
        usage = body["usage"]
        model = body["model"]
        if "prompt_tokens" in usage:
            provider, prompt, output = "openai", usage["prompt_tokens"], usage["completion_tokens"]
        else:
            provider = "anthropic"
            prompt = sum(
                usage.get(k, 0) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            )
            output = usage["output_tokens"]
        plain = genai_prices.Usage(input_tokens=prompt, output_tokens=output)
        total += float(genai_prices.calc_price(plain, model, provider_id=provider).total_price)
    return total


def run(folder: Path, env: dict[str, str], judge: str, index: int, extra: tuple[str, ...]) -> tuple[str, float, float]:
    out = f"out-{index}"
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "blueprints",
        f"--weval-judges={judge}", "--weval-check-models=off", "--weval-batch-poll=0.2",
        f"--weval-cache-dir=cache-{index}", f"--weval-out={out}", *extra,
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - started
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
    summary = folder / out / "summary.json"
    cost = float(json.loads(summary.read_text())["usageTotal"]["costUsd"] or 0.0) if summary.exists() else float("nan")
    return last, cost, wall


def workload(args: argparse.Namespace) -> None:
    print(
        f"judged workload: {args.items} items x {args.points} points, answers of ~{args.answer_words} tokens, "
        f"tested model {MODEL}"
    )
    answer = " ".join(f"word{n % 97}" for n in range(args.answer_words))
    for judge in JUDGES:
        print(f"\njudge {judge}")
        print(f"{'run':<14} {'billed':>10} {'list price':>11} {'billed/live':>12} {'wall':>7}  outcome")
        live = None
        with tempfile.TemporaryDirectory() as tmp, FakeServer(batch_delay_s=0.3) as server:
            folder = Path(tmp)
            write_judged_suite(folder, args.items, "cost", points=args.points, model=MODEL)
            judge_name = judge.partition(":")[2]
            server.rules = [
                Rule(model=judge_name, contains="<CRITERION>", reply=VERDICT),
                Rule(model=MODEL.partition(":")[2], reply=answer + " {last}"),
            ]
            env = {
                **os.environ,
                **server.env(),
                "ANTHROPIC_API_KEY": "bench-key",
                "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
            }
            env.pop("PYTEST_ADDOPTS", None)
            for index, (label, extra) in enumerate(RUNS):
                server.reset()
                server.prompt_cache = type(server.prompt_cache)(by_prefix=True)
                outcome, billed, wall = run(folder, env, judge, index, extra)
                listed = list_price(server.prompt_cache.sent)
                if label == "live":
                    live = billed
                ratio = f"{billed / live:.2f}" if live else ""
                print(f"{label:<14} ${billed:>9.4f} ${listed:>10.4f} {ratio:>12} {wall:>6.1f}s  {outcome}")


def corpus_plan(args: argparse.Namespace) -> None:
    corpus = args.corpus or default_corpus()
    print(f"\ncorpus plan: {corpus}, --weval-models={PLAN_MODELS} --weval-judges={PLAN_JUDGES}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        command = [
            sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
            f"--weval-models={PLAN_MODELS}", f"--weval-judges={PLAN_JUDGES}", "--weval-check-models=off",
            "--weval-cache=off", f"--weval-out={out}",
        ]  # fmt: skip
        started = time.monotonic()
        done = subprocess.run(command, cwd=corpus, env=env, capture_output=True, text=True, timeout=3600)
        wall = time.monotonic() - started
        if not (out / "plan.json").exists():
            print(done.stdout[-2000:], done.stderr[-2000:])
            return
        plan = json.loads((out / "plan.json").read_text())
        cost = plan["cost_usd"]
        print(f"  requests: {plan['requests']['total']:,} ({wall:.1f} s)")
        for model, row in sorted(plan["requests"]["by_model"].items()):
            own = row["cost_usd"]
            if own is None:
                print(f"  {model:<32} {row['total']:>9,}  no price")
                continue
            cached = own.get("prompt_cached") or own
            print(
                f"  {model:<32} {row['total']:>9,}  list ${own['low']:,.2f}-${own['high']:,.2f}  "
                f"prompt-cached ${cached['low']:,.2f}-${cached['high']:,.2f}"
            )
        cached = cost.get("prompt_cached") or cost
        print(
            f"  total list price ${cost['low']:,.2f}-${cost['high']:,.2f}; expected billed (prompt-cached) "
            f"${cached['low']:,.2f}-${cached['high']:,.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=12)
    parser.add_argument("--points", type=int, default=3)
    parser.add_argument("--answer-words", type=int, default=1300)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--no-corpus", action="store_true", help="measure the workload only")
    args = parser.parse_args()
    workload(args)
    if not args.no_corpus:
        corpus_plan(args)


if __name__ == "__main__":
    main()
