"""``python -m tests.fakeserver --port N --latency-ms 100 [--rules rules.json] [--fault-rate 0.1
--fault-kinds 500,429 --seed 1] [--rate-limit 40 --rate-headers openai --retry-after seconds]
[--batch-delay-s 0.2 --batch-expire-rate 0.1 --batch-seed 1]``: prints ``FAKESERVER http://127.0.0.1:PORT`` once listening."""

from __future__ import annotations

import argparse
import asyncio
import json

from tests.fakeserver.server import FAULTS, FakeServer, RateLimiter, Rule


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fakeserver", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--rules", help="JSON file: a list of rule objects (see Rule)")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--fault-kinds", default="500", help=f"comma separated: {','.join(FAULTS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate-limit", type=float, help="requests per second allowed (a token bucket)")
    parser.add_argument("--rate-burst", type=int, help="bucket size (default: the rate)")
    parser.add_argument("--rate-headers", default="openai", help="openai, anthropic or none")
    parser.add_argument("--retry-after", default="seconds", help="seconds, ms, date or none")
    parser.add_argument("--rate-status", type=int, default=429, help="status of a refusal (429 or 529)")
    parser.add_argument("--batch-delay-s", type=float, default=0.2, help="seconds from a batch's creation to its end")
    parser.add_argument("--batch-expire-rate", type=float, default=0.0, help="fraction of batch lines that expire")
    parser.add_argument("--batch-seed", type=int, default=0, help="seed of the per-line expiry draw")
    args = parser.parse_args(argv)
    rules = []
    if args.rules:
        with open(args.rules, encoding="utf-8") as handle:
            rules = [Rule.from_dict(r) for r in json.load(handle)]
    server = FakeServer(
        rules,
        latency_ms=args.latency_ms,
        fault_rate=args.fault_rate,
        fault_kinds=tuple(k.strip() for k in args.fault_kinds.split(",") if k.strip()),
        seed=args.seed,
        port=args.port,
        host=args.host,
        rate_limit=RateLimiter(
            args.rate_limit,
            args.rate_burst,
            None if args.rate_headers == "none" else args.rate_headers,
            None if args.retry_after == "none" else args.retry_after,
            args.rate_status,
        )
        if args.rate_limit
        else None,
        batch_delay_s=args.batch_delay_s,
        batch_expire_rate=args.batch_expire_rate,
        batch_seed=args.batch_seed,
    )
    try:
        asyncio.run(server.serve_forever())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
