"""Runs put/get operations against a real Mooncake master through the published client library.

Reads a JSON list of operations on stdin ({"op": "put", "key": k, "hex": v} or {"op": "get", "key": k})
and prints one JSON line with the result of each: {"rc": n} for a put, {"hex": v} for a get, each with
the milliseconds it took ("ms") and when it ended ("at", milliseconds since the epoch).
"""

import argparse
import json
import sys
import time

from mooncake.store import MooncakeDistributedStore


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--master", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--tenant", default="")
    parser.add_argument("--buffer", type=int, default=16 << 20)
    args = parser.parse_args()
    ops = json.load(sys.stdin)

    store = MooncakeDistributedStore()
    rc = store.setup(
        args.host, "P2PHANDSHAKE", 0, args.buffer, "tcp", "", args.master, None, False, "", args.tenant
    )
    if rc != 0:
        print(json.dumps({"setup": rc}))
        return 1
    results = []
    for op in ops:
        started = time.monotonic()
        if op["op"] == "put":
            result = {"rc": store.put(op["key"], bytes.fromhex(op["hex"]))}
        elif op["op"] == "get":
            result = {"hex": store.get(op["key"]).hex()}
        else:
            raise ValueError(f"unknown op {op['op']}")
        result["ms"] = round((time.monotonic() - started) * 1000)
        result["at"] = round(time.time() * 1000)
        results.append(result)
    store.close()
    print(json.dumps({"setup": 0, "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
