"""One client kept alive across a failover, as an engine's would be (failover tests and bench). Run
with the Mooncake venv's python3:

  warm_client.py --master IP:PORT --host ADDR --size BYTES [--put PREFIX COUNT]
                 [--put-interval-ms MS] [--each-put]

Prints one JSON line per event, each with "at" (milliseconds since the epoch):
  {"event": "setup", "rc": n, "attempts": n}      once the client is set up (retried until --setup-until)
  {"event": "put", "key": k, "rc": n, "ms": t}   after each put (with --each-put), t its latency
  {"event": "written", "ok": n, "failed": [..], "present": n}   after the puts (with --put)
then reads one JSON line on stdin, {"keys": [...], "untilMs": ms}, and polls those keys (one
batch_is_exist per round, a get of each key found) until every one has read back or untilMs:
  {"event": "error"}      the first round the master did not answer (a result of -1)
  {"event": "answered"}   the first round it answered for every key
  {"event": "hit", "key": k, "ok": bool}   a key read back; ok: with the bytes written under it
  {"event": "done", "reason": "all" | "deadline" | "stopped"}
A line "stop" on stdin ends the polling. An object's bytes start with its key, so a read that returned
another key's object is told apart.
"""

import argparse
import json
import os
import select
import sys
import time
import zlib

from mooncake.store import MooncakeDistributedStore

PATTERN = bytes(range(251)) * ((16 << 20) // 251 + 2)


def now_ms() -> int:
    return round(time.time() * 1000)


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, "at": now_ms(), **fields}), flush=True)


def value(key: str, size: int) -> bytes:
    head = (key + "|").encode()
    offset = zlib.crc32(head) % 251
    return head + PATTERN[offset : offset + size - len(head)]


def setup(args):
    attempts = 0
    while True:
        attempts += 1
        store = MooncakeDistributedStore()
        rc = store.setup(args.host, "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", args.master, None, False, "", "")
        if rc == 0 or now_ms() >= args.setup_until:
            emit("setup", rc=rc, attempts=attempts)
            return store if rc == 0 else None
        time.sleep(0.5)


def poll(store, keys, until_ms, size):
    pending = list(keys)
    erred = answered = False
    while pending:
        if now_ms() >= until_ms:
            return "deadline"
        found = store.batch_is_exist(pending)
        if any(r < 0 for r in found):
            if not erred:
                emit("error")
                erred = True
        elif not answered:
            emit("answered")
            answered = True
        still = []
        for key, r in zip(pending, found):
            data = store.get(key) if r == 1 else b""
            if data:
                emit("hit", key=key, ok=data == value(key, size))
            else:
                still.append(key)
        pending = still
        readable, _, _ = select.select([sys.stdin], [], [], 0.1)
        if readable and sys.stdin.readline().strip() == "stop":
            return "stopped"
    return "all"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--master", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--put", nargs=2, metavar=("PREFIX", "COUNT"))
    parser.add_argument("--setup-until", type=int, default=0, help="keep trying until this epoch ms")
    parser.add_argument("--put-interval-ms", type=int, default=0, help="pause between puts")
    parser.add_argument("--each-put", action="store_true", help="emit a put event for every put")
    args = parser.parse_args()
    store = setup(args)
    if store is None:
        return 1
    if args.put:
        prefix, count = args.put[0], int(args.put[1])
        keys = [f"{prefix}-{i:04d}" for i in range(count)]
        failed = []
        for k in keys:
            data = value(k, args.size)
            started = time.perf_counter()
            rc = store.put(k, data)
            took = (time.perf_counter() - started) * 1000
            if rc != 0:
                failed.append(k)
            if args.each_put:
                emit("put", key=k, rc=rc, ms=round(took, 3))
            if args.put_interval_ms:
                time.sleep(args.put_interval_ms / 1000)
        present = sum(1 for r in store.batch_is_exist(keys) if r == 1)
        emit("written", ok=count - len(failed), failed=failed, present=present)
    line = sys.stdin.readline()
    if not line.strip() or line.strip() == "stop":
        emit("done", reason="stopped")
        os._exit(0)
    request = json.loads(line)
    emit("done", reason=poll(store, request["keys"], request["untilMs"], args.size))
    # close() can wait on a master that is gone; the bench has what it needs.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
