"""One client of the datapath bench: puts then gets `count` objects of each size and prints one JSON line
of per-operation latencies. Run with the Mooncake venv's python3.

  datapath_client.py injected <spec.json>  the engine stand-in's own code: its flag parser and config
                                           reader over the argv and env the webhook injected, its
                                           StoreClient (lock, counters) for every call
  datapath_client.py raw <spec.json>       MooncakeDistributedStore set up by hand, called directly
  datapath_client.py memcpy <spec.json>    the machine's memory-copy bandwidth (memmove of large buffers)
"""

import ctypes
import json
import os
import sys
import time

STANDIN = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "engine-standin")


def measure(put, get, remove, spec, tag):
    out = {}
    for size in spec["sizes"]:
        count = spec["counts"][str(size)]
        data = [bytes([i % 251]) * size for i in range(count)]
        keys = [f"{tag}-{size}-{i}" for i in range(count)]
        put(f"{tag}-warm-{size}", data[0])
        puts, gets = [], []
        for key, value in zip(keys, data):
            t0 = time.perf_counter()
            rc = put(key, value)
            puts.append(time.perf_counter() - t0)
            if rc != 0:
                raise SystemExit(f"put {key} failed: rc={rc}")
        for key, value in zip(keys, data):
            t0 = time.perf_counter()
            got = get(key)
            gets.append(time.perf_counter() - t0)
            if got != value:
                raise SystemExit(f"get {key} returned {len(got or b'')} bytes, not what was put")
        for key in keys + [f"{tag}-warm-{size}"]:
            remove(key)
        out[str(size)] = {"putSeconds": puts, "getSeconds": gets}
    return out


def injected(spec):
    sys.path.insert(0, STANDIN)
    from engine_standin_config import vllm_store_settings
    from engine_standin_flags import parse_server_args
    from kvpool_engine_standin import Metrics, StoreClient, object_bytes

    argv = spec["argv"]
    args = parse_server_args("vllm", argv[1:])
    settings = vllm_store_settings(args, spec["env"])
    client = StoreClient(settings, Metrics({}, object_bytes(args)))
    rc = client.connect()
    if rc != 0:
        raise SystemExit(f"setup through the injected configuration failed: rc={rc}")
    setup = {k: getattr(settings, k) for k in ("master_address", "metadata_server", "protocol",
                                                 "local_hostname", "global_segment_size",
                                                 "local_buffer_size", "tenant_id")}
    try:
        # A get through StoreClient answers None for a miss; the bench compares bytes.
        return setup, measure(client.put, lambda k: client.get(k) or b"",
                              lambda k: client.store.remove(k), spec, spec["tag"])
    finally:
        client.close()


def raw(spec):
    from mooncake.store import MooncakeDistributedStore

    r = spec["raw"]
    store = MooncakeDistributedStore()
    rc = store.setup(r["local_hostname"], r["metadata_server"], r["global_segment_size"],
                     r["local_buffer_size"], r["protocol"], r["device_name"], r["master_server_address"],
                     None, False, "", r["tenant_id"])
    if rc != 0:
        raise SystemExit(f"raw setup failed: rc={rc}")
    try:
        return r, measure(store.put, store.get, store.remove, spec, spec["tag"])
    finally:
        store.close()


def memcpy(spec):
    n = spec["memcpyBytes"]
    src, dst = bytearray(os.urandom(1 << 20) * (n >> 20)), bytearray(n)
    s = (ctypes.c_char * n).from_buffer(src)
    d = (ctypes.c_char * n).from_buffer(dst)
    ctypes.memmove(d, s, n)  # fault the pages in
    seconds = []
    for _ in range(spec["memcpyRepeats"]):
        t0 = time.perf_counter()
        ctypes.memmove(d, s, n)
        seconds.append(time.perf_counter() - t0)
    return {"bytes": n, "seconds": seconds}


def main():
    mode, path = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    if mode == "memcpy":
        print(json.dumps({"memcpy": memcpy(spec)}))
        return
    setup, figures = injected(spec) if mode == "injected" else raw(spec)
    print(json.dumps({"setup": setup, "sizes": figures}))


if __name__ == "__main__":
    main()
