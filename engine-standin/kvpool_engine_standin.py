"""kvpool engine stand-in: NOT vLLM and NOT SGLang. It runs no model and needs no GPU.

It accepts the command line and the Mooncake configuration a real vLLM server (MooncakeStoreConnector)
or SGLang server (HiCache with the mooncake storage backend) reads, and moves "KV" blocks through the
real Mooncake store the way those engines do: one object per block of tokens, keyed like the engine
keys it, looked up before it is computed and written after. The local cluster runs it in place of the
engines so the operator's injection can be checked end to end. See docs/engine-standin.md.

Usage: python3 kvpool_engine_standin.py vllm serve <model> [flags]
       python3 kvpool_engine_standin.py sglang --model-path <model> [flags]
(or through the launch shims: `vllm serve ...`, `python3 -m sglang.launch_server ...`)
"""

import hashlib
import http.server
import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass

from engine_standin_config import (
    ConfigError,
    StoreSettings,
    check_master_resolves,
    local_pod_ip,
    sglang_store_settings,
    vllm_store_settings,
)
from engine_standin_flags import ServerArgs, UsageError, parse_server_args
from engine_standin_log import log
from engine_standin_metrics import Operation, SglangMetrics, VllmMetrics

PROGRAM = "kvpool-engine-standin"

# A small model geometry, so objects stay a few tens of KiB.
LAYERS = 4
KV_HEADS = 2
HEAD_DIM = 64


def fatal(msg: str, code: int, **fields) -> int:
    log(msg, level="error", **fields)
    print(f"{PROGRAM}: error: {msg}", file=sys.stderr, flush=True)
    return code


# --- The store client and the block pipeline --------------------------------------------------------


class StoreClient:
    """The Mooncake client library; each call is counted in the operation it belongs to."""

    def __init__(self, settings: StoreSettings):
        self.settings = settings
        self.lock = threading.Lock()
        self.store = None

    def connect(self) -> int:
        from mooncake.store import MooncakeDistributedStore

        s = self.settings
        self.store = MooncakeDistributedStore()
        return self.store.setup(
            s.local_hostname,
            s.metadata_server,
            s.global_segment_size,
            s.local_buffer_size,
            s.protocol,
            s.device,
            s.master_address,
            None,
            False,
            "",
            s.tenant_id,
        )

    def _call(self, op: Operation, fn, *args):
        started = time.monotonic()
        try:
            with self.lock:
                return fn(*args)
        except Exception as err:  # The engine logs it and goes on without the store for this call.
            op.raised = True
            log("store call raised", level="warn", operation=op.name, error=str(err))
            return None
        finally:
            op.seconds += time.monotonic() - started

    def exists(self, key: str, op: Operation) -> bool:
        rc = self._call(op, self.store.is_exist, key)
        op.call(rc is not None and rc >= 0, 0)
        return rc == 1

    def get(self, key: str, op: Operation) -> bytes | None:
        data = self._call(op, self.store.get, key)
        # The library answers a failed get with empty bytes.
        op.call(bool(data), len(data or b""))
        return data or None

    def put(self, key: str, data: bytes, op: Operation) -> int:
        rc = self._call(op, self.store.put, key, data)
        op.call(rc == 0, len(data))
        return -1 if rc is None else rc

    def close(self) -> None:
        with self.lock:
            if self.store is not None:
                self.store.close()
                self.store = None


def dtype_bits(dtype: str) -> int:
    if dtype.startswith("fp8") or dtype == "mxfp8":
        return 8
    if dtype in ("nvfp4", "fp4_mx_block16"):
        return 4
    return 16  # auto (the model's own bfloat16), bfloat16, bf16, float16


def object_bytes(args: ServerArgs) -> int:
    """One block's KV for every layer: block × layers × kv_heads × head_dim × (K and V) × dtype size."""
    return args.block_size * LAYERS * KV_HEADS * HEAD_DIM * 2 * dtype_bits(args.dtype) // 8


def canonical_dtype(dtype: str) -> str:
    """The element type the bytes stand for: spellings of one type produce the same bytes."""
    return {"auto": "bfloat16", "bf16": "bfloat16", "fp8": "fp8_e4m3"}.get(dtype, dtype)


@dataclass
class Block:
    key: str
    digest: bytes


class BlockPipeline:
    """Cuts a prompt into blocks, keys them as the engine does, and loads or computes each one."""

    def __init__(self, args: ServerArgs, settings: StoreSettings | None, store: StoreClient | None):
        self.args = args
        self.settings = settings
        self.store = store
        self.block_bytes = object_bytes(args)
        self.kv_type = canonical_dtype(args.dtype).encode()

    def key(self, digest: bytes) -> str:
        if self.args.engine == "vllm":
            model = self.args.model.rstrip("/").split("/")[-1]
            prefix = self.settings.key_prefix if self.settings else ""
            return f"{prefix}{model}@tp_rank:0@pcp0@dcp0@pp_rank:0@group:0@{digest.hex()}"
        return f"{self.args.served_model_name}_{digest.hex()}_0"

    def blocks(self, tokens: list[str]) -> list[Block]:
        size = self.args.block_size
        parent = b""
        out = []
        for start in range(0, len(tokens) - size + 1, size):
            # Chaining the parent's hash makes a block's key stand for the whole prefix up to it.
            digest = hashlib.sha256(parent + json.dumps(tokens[start : start + size]).encode()).digest()
            out.append(Block(self.key(digest), digest))
            parent = digest
        return out

    def compute(self, block: Block) -> bytes:
        seed = b"kvpool-standin-kv|" + self.kv_type + b"|" + block.digest
        return hashlib.shake_256(seed).digest(self.block_bytes)

    def run(self, tokens: list[str]) -> tuple[list[str], list[Operation], int]:
        """One result per full block, hit (loaded from the store), miss (computed) or corrupt; the store
        operations, as the engine batches them (a lookup, a load, a save); and the tokens saved."""
        results = []
        lookup, load, save = Operation("lookup_exists"), Operation("load_get"), Operation("save_put")
        prefix_intact = self.store is not None
        for block in self.blocks(tokens):
            stored = self.store.exists(block.key, lookup) if self.store else False
            if stored and prefix_intact:
                expected = self.compute(block)
                data = self.store.get(block.key, load)
                if data == expected:
                    results.append("hit")
                    continue
                log("stored block differs from this prompt's KV", level="warn", key=block.key,
                    stored_bytes=len(data or b""), expected_bytes=len(expected))
                results.append("corrupt")
                prefix_intact = False
                continue
            # The engine loads only the longest stored prefix; everything after it is recomputed.
            prefix_intact = False
            data = self.compute(block)
            results.append("miss")
            if self.store and self.settings.saves and not stored:
                rc = self.store.put(block.key, data, save)
                if rc != 0:
                    log("put failed", level="warn", key=block.key, rc=rc)
        saved = (save.keys - save.failed_keys) * self.args.block_size
        return results, [lookup, load, save], saved


def generated_text(prompt: str, max_tokens: int) -> str:
    words = hashlib.shake_256(prompt.encode()).digest(2 * max_tokens)
    return " ".join(f"tok{words[i]:02x}{words[i + 1]:02x}" for i in range(0, len(words), 2))


# --- HTTP ------------------------------------------------------------------------------------------


class StandinServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, args: ServerArgs, pipeline: BlockPipeline,
                 metrics: VllmMetrics | SglangMetrics):
        super().__init__(address, StandinHandler)
        self.args = args
        self.pipeline = pipeline
        self.metrics = metrics
        self.ready = threading.Event()


class StandinHandler(http.server.BaseHTTPRequestHandler):
    server: StandinServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass  # One JSON line per request instead, from respond().

    def respond(self, status: int, body, content_type="application/json", **log_fields):
        payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        log("request", method=self.command, path=self.path, status=status, client=self.client_address[0],
            **log_fields)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/health":
            if self.server.ready.is_set():
                self.respond(200, "", content_type="text/plain")
            else:
                self.respond(503, "connecting to the Mooncake store\n", content_type="text/plain")
        elif path == "/metrics" and self.server.metrics.serves:
            self.respond(200, self.server.metrics.render(),
                         content_type="text/plain; version=0.0.4; charset=utf-8")
        elif path == "/v1/models":
            name = self.server.args.served_model_name
            model = {"id": name, "object": "model", "owned_by": PROGRAM}
            self.respond(200, {"object": "list", "data": [model]})
        else:
            self.respond(404, {"error": f"no route {path}"})

    def do_POST(self):
        path = self.path.split("?")[0]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path != "/v1/completions":
            self.respond(404, {"error": f"no route {path}"})
            return
        if not self.server.ready.is_set():
            self.respond(503, {"error": "not ready: still connecting to the Mooncake store"})
            return
        try:
            request = json.loads(raw or b"{}")
            prompt = request.get("prompt")
            if isinstance(prompt, list) and len(prompt) == 1:
                prompt = prompt[0]
            if not isinstance(prompt, str):
                raise ValueError("prompt must be a string")
            max_tokens = min(max(int(request.get("max_tokens", 16)), 0), 4096)
        except (ValueError, AttributeError) as err:
            self.respond(400, {"error": f"bad request: {err}"})
            return
        self.complete(prompt, max_tokens)

    def complete(self, prompt: str, max_tokens: int):
        started = time.monotonic()
        tokens = prompt.split()
        results, operations, saved = self.server.pipeline.run(tokens)
        metrics = self.server.metrics
        for op in operations:
            metrics.record(op)
        metrics.prompt(len(tokens), results.count("hit") * self.server.args.block_size, saved)
        text = generated_text(prompt, max_tokens)
        counts = {r: results.count(r) for r in ("hit", "miss", "corrupt")}
        body = {
            "object": "text_completion",
            "model": self.server.args.served_model_name,
            "blocks": len(results),
            "hits": counts["hit"],
            "misses": counts["miss"],
            "corrupt": counts["corrupt"],
            "text": text,
            "choices": [{"index": 0, "text": text, "finish_reason": "length"}],
            "usage": {"prompt_tokens": len(tokens), "completion_tokens": max_tokens,
                      "cached_tokens": counts["hit"] * self.server.args.block_size},
        }
        self.respond(200, body, prompt_tokens=len(tokens), blocks=len(results), hits=counts["hit"],
                     misses=counts["miss"], corrupt=counts["corrupt"],
                     ms=round((time.monotonic() - started) * 1000, 1))


# --- Startup ---------------------------------------------------------------------------------------


def bind_address(args: ServerArgs, env) -> str:
    """Pods sharing one host network each bind their own Pod IP instead of every address."""
    if args.host and args.host not in ("0.0.0.0", "::"):
        return args.host
    return local_pod_ip(env) or "0.0.0.0"


def main(engine: str, argv: list[str], env=None) -> int:
    env = os.environ if env is None else env
    try:
        args = parse_server_args(engine, argv)
    except UsageError as err:
        return fatal(str(err), 2, engine=engine, argv=argv)
    for flag in args.ignored:
        log("ignoring a flag the stand-in does not model", level="warn", flag=flag)
    try:
        settings = vllm_store_settings(args, env) if engine == "vllm" else sglang_store_settings(args, env)
        resolved = check_master_resolves(settings.master_address) if settings else None
    except ConfigError as err:
        return fatal(f"Mooncake configuration: {err}", 1, engine=engine)

    tenant = (settings.tenant_id or "default") if settings else ""
    if engine == "vllm":
        metrics = VllmMetrics(args.served_model_name, connected=settings is not None)
    else:
        metrics = SglangMetrics(enabled=args.metrics)
    store = StoreClient(settings) if settings else None
    pipeline = BlockPipeline(args, settings, store)

    address = bind_address(args, env)
    try:
        server = StandinServer((address, args.port), args, pipeline, metrics)
    except OSError as err:
        return fatal(f"cannot listen on {address}:{args.port}: {err}", 1)
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    log(f"{PROGRAM} serving as a stand-in for {engine} (no model runs here)", listen=f"{address}:{args.port}",
        model=args.model, served_model_name=args.served_model_name, dtype=args.dtype,
        block_size=args.block_size, block_bytes=pipeline.block_bytes,
        geometry={"layers": LAYERS, "kv_heads": KV_HEADS, "head_dim": HEAD_DIM})

    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())

    if settings:
        log("connecting to the Mooncake store", connector=settings.connector, source=settings.source,
            master=settings.master_address, master_resolves_to=resolved, tenant=tenant,
            local_hostname=settings.local_hostname, protocol=settings.protocol,
            metadata_server=settings.metadata_server, global_segment_size=settings.global_segment_size,
            local_buffer_size=settings.local_buffer_size, key_prefix=settings.key_prefix,
            saves=settings.saves, **settings.details)
        rc = store.connect()
        if rc != 0:
            server.shutdown()
            return fatal(
                f"Mooncake setup failed with rc={rc} (master {settings.master_address}, tenant {tenant}, "
                f"protocol {settings.protocol}, local hostname {settings.local_hostname}); "
                "the engine would not start either",
                1,
            )
        log("connected to the Mooncake store", master=settings.master_address, tenant=tenant)
    else:
        log("no Mooncake store configured: every prompt is recomputed")
    server.ready.set()

    while not stopping.wait(0.5):
        pass
    log("stopping")
    server.shutdown()
    if store:
        store.close()
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("vllm", "sglang"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
