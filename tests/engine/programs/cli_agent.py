"""A stand-in ``cli`` target for tests/engine/test_cli_target.py (agent-formats.md §1.10).

--prompt P [--file F ...] --output OUT [--mode json|text|plain|none|fail] [--eval-id ID] [--attempt N]
"""

import argparse
import json
import os
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--prompt", required=True)
parser.add_argument("--file", action="append", default=[])
parser.add_argument("--output", required=True)
parser.add_argument("--mode", default="json")
parser.add_argument("--eval-id", default="")
parser.add_argument("--attempt", default="")
args = parser.parse_args()

names = [os.path.basename(f) for f in args.file]
answer = f"echo: {args.prompt} | files: {', '.join(names)} | id: {args.eval_id} | attempt: {args.attempt}"

if args.mode == "fail":
    sys.stderr.write("agent crashed: no model\n")
    sys.exit(4)
if args.mode == "none":
    sys.exit(0)
with open(args.output, "w", encoding="utf-8") as handle:
    if args.mode == "plain":
        handle.write(answer)
    elif args.mode == "text":
        json.dump({"text": answer, "token_usage": {"input": 7, "output": 3}, "duration_ms": 42}, handle)
    else:
        json.dump(
            {
                "output_messages": [
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"tool": "Read", "input": {"path": names[0] if names else ""}, "duration_ms": 5}
                        ],
                    },
                    {"role": "tool", "content": "file text"},
                    {"role": "assistant", "content": [{"type": "text", "value": answer}]},
                ],
                "token_usage": {"input": 11, "output": 5, "cached": 0},
                "cost_usd": 0.002,
                "duration_ms": 1234,
            },
            handle,
        )
