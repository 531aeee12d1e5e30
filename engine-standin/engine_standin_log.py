"""Log lines of the engine stand-in: one JSON object per line on stdout."""

import json
import time


def log(msg: str, level: str = "info", **fields) -> None:
    record = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()), "level": level, "msg": msg}
    record.update(fields)
    print(json.dumps(record, default=str), flush=True)

