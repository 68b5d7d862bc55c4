"""``python -m tests.fakeserver --port N --latency-ms 100 [--rules rules.json] [--fault-rate 0.1
--fault-kinds 500,429 --seed 1]``: prints ``FAKESERVER http://127.0.0.1:PORT`` once listening."""

from __future__ import annotations

import argparse
import asyncio
import json

from tests.fakeserver.server import FAULTS, FakeServer, Rule


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fakeserver", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--rules", help="JSON file: a list of rule objects (see Rule)")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--fault-kinds", default="500", help=f"comma separated: {','.join(FAULTS)}")
    parser.add_argument("--seed", type=int, default=0)
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
    )
    try:
        asyncio.run(server.serve_forever())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
