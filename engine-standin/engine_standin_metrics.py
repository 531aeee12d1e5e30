"""The metrics the engine stand-in serves on /metrics: the families real engines export, under their
names, labels and text format (prometheus_client's: `_total` counters with `_created` gauges), so the
operator reads the stand-in exactly as it reads vLLM and SGLang.

vLLM 0.32 (MooncakeStoreConnector): vllm:mooncake_store_operation_{total,keys_total,bytes_total,
failed_keys_total,time_seconds} by operation and status; vllm:external_prefix_cache_{queries,hits}_total
and vllm:prompt_tokens_by_source_total, in tokens. SGLang 0.5.23 with HiCache on Mooncake (only with
--enable-metrics, as the real server): sglang:backuped_tokens_total and sglang:prefetched_tokens_total.
See docs/engine-standin.md and docs/decisions/0027-engine-observation-contract.md.
"""

import threading
import time

# vLLM's buckets for vllm:mooncake_store_operation_time_seconds.
OPERATION_TIME_BUCKETS = (1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 1e-1, 2e-1, 3e-1, 4e-1, 5e-1, 7.5e-1,
                          1.0, 1.5, 2.0)


def label_value(value) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def labels_text(labels: dict) -> str:
    return ",".join(f'{k}="{label_value(v)}"' for k, v in labels.items())


def number(value: float) -> str:
    """A value as prometheus_client writes it (floatToGoString): `5.0`, `1.048576e+06`, `+Inf`."""
    d = float(value)
    if d == float("inf"):
        return "+Inf"
    s = repr(d)
    dot = s.find(".")
    if d > 0 and dot > 6:
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return s


class Family:
    """One counter or histogram family with labelled series, created at their first observation."""

    def __init__(self, name: str, kind: str, doc: str, buckets: tuple = (), created: bool = True):
        self.name, self.kind, self.doc, self.buckets = name, kind, doc, buckets
        # A process writing its metrics in prometheus_client's multiprocess mode (SGLang) has no _created.
        self.created = created
        self.series: dict[tuple, dict] = {}

    def child(self, labels: dict) -> dict:
        key = tuple(labels.items())
        if key not in self.series:
            self.series[key] = {"labels": dict(labels), "value": 0.0, "created": time.time(),
                                "counts": [0] * len(self.buckets), "sum": 0.0, "count": 0}
        return self.series[key]

    def inc(self, labels: dict, amount: float = 1.0) -> None:
        self.child(labels)["value"] += amount

    def observe(self, labels: dict, value: float) -> None:
        s = self.child(labels)
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                s["counts"][i] += 1
        s["sum"] += value
        s["count"] += 1

    def render(self) -> list[str]:
        if self.kind == "counter":
            name = f"{self.name}_total"
            lines = [f"# HELP {name} {self.doc}", f"# TYPE {name} counter"]
            lines += [f"{name}{{{labels_text(s['labels'])}}} {number(s['value'])}"
                      for s in self.series.values()]
        else:
            lines = [f"# HELP {self.name} {self.doc}", f"# TYPE {self.name} histogram"]
            for s in self.series.values():
                base = labels_text(s["labels"])
                for bound, count in zip(self.buckets, s["counts"]):
                    lines.append(f'{self.name}_bucket{{{base},le="{number(bound)}"}} {number(count)}')
                lines.append(f'{self.name}_bucket{{{base},le="+Inf"}} {number(s["count"])}')
                lines.append(f"{self.name}_count{{{base}}} {number(s['count'])}")
                lines.append(f"{self.name}_sum{{{base}}} {number(s['sum'])}")
        if self.series and self.created:
            created = f"{self.name}_created"
            lines += [f"# HELP {created} {self.doc}", f"# TYPE {created} gauge"]
            lines += [f"{created}{{{labels_text(s['labels'])}}} {number(s['created'])}"
                      for s in self.series.values()]
        return lines


class Operation:
    """One store operation as vLLM records it: keys, bytes, failed keys and its time."""

    def __init__(self, name: str):
        self.name = name
        self.keys = 0
        self.failed_keys = 0
        self.bytes = 0
        self.seconds = 0.0
        self.raised = False

    def call(self, ok: bool, nbytes: int) -> None:
        """One key's call; its time is added by whoever timed it."""
        self.keys += 1
        self.failed_keys += 0 if ok else 1
        self.bytes += nbytes

    @property
    def status(self) -> str:
        if self.raised:
            return "error"
        return "partial_failure" if self.failed_keys else "ok"


class VllmMetrics:
    def __init__(self, model_name: str, connected: bool):
        self.lock = threading.Lock()
        self.labels = {"model_name": model_name, "engine": "0"}
        self.connected = connected
        self.time = Family("vllm:mooncake_store_operation_time_seconds", "histogram",
                           "Histogram of Mooncake store communication time.", OPERATION_TIME_BUCKETS)
        self.calls = Family("vllm:mooncake_store_operation", "counter",
                            "Number of Mooncake store communication operations.")
        self.keys = Family("vllm:mooncake_store_operation_keys", "counter",
                           "Number of Mooncake store keys touched by operations.")
        self.bytes = Family("vllm:mooncake_store_operation_bytes", "counter",
                            "Number of bytes transferred by Mooncake store operations.")
        self.failed = Family("vllm:mooncake_store_operation_failed_keys", "counter",
                             "Number of Mooncake store keys that failed in operations.")
        self.queries = Family("vllm:external_prefix_cache_queries", "counter",
                              "External prefix cache queries from KV connector cross-instance cache sharing, "
                              "in terms of number of queried tokens.")
        self.hits = Family("vllm:external_prefix_cache_hits", "counter",
                           "External prefix cache hits from KV connector cross-instance cache sharing, "
                           "in terms of number of cached tokens.")
        self.by_source = Family("vllm:prompt_tokens_by_source", "counter",
                                "Number of prompt tokens by source.")
        for family in (self.queries, self.hits):
            family.child(self.labels)
        for source in ("local_compute", "local_cache_hit", "external_kv_transfer"):
            self.by_source.child({**self.labels, "source": source})

    def record(self, op: Operation) -> None:
        """One operation's figures, as vLLM's MooncakeStorePromMetrics.observe records them."""
        if op.keys == 0 and not op.raised:
            return
        labels = {**self.labels, "operation": op.name, "status": op.status}
        with self.lock:
            self.time.observe(labels, op.seconds)
            self.calls.inc(labels)
            self.keys.inc(labels, op.keys)
            self.bytes.inc(labels, op.bytes)
            self.failed.inc(labels, op.keys if op.raised else op.failed_keys)

    # vLLM serves /metrics on its API port whatever its flags.
    serves = True

    def prompt(self, tokens: int, loaded_tokens: int, saved_tokens: int = 0) -> None:
        with self.lock:
            if self.connected:
                self.queries.inc(self.labels, tokens)
                self.hits.inc(self.labels, loaded_tokens)
            self.by_source.inc({**self.labels, "source": "external_kv_transfer"}, loaded_tokens)
            self.by_source.inc({**self.labels, "source": "local_compute"}, tokens - loaded_tokens)

    def render(self) -> str:
        # Without a connector vLLM registers no connector metrics at all.
        store = [self.time, self.calls, self.keys, self.bytes, self.failed, self.queries, self.hits]
        families = [*(store if self.connected else []), self.by_source]
        with self.lock:
            return "\n".join(line for f in families for line in f.render()) + "\n"


class SglangMetrics:
    def __init__(self, enabled: bool):
        self.lock = threading.Lock()
        self.enabled = enabled
        # The storage collector's labels: one tensor-, pipeline- and context-parallel rank here.
        self.labels = {"storage_backend": "mooncake", "tp_rank": "0", "dp_rank": "0", "pp_rank": "0",
                       "pp_size": "1", "attn_cp_rank": "0", "attn_cp_size": "1"}
        self.prefetched = Family("sglang:prefetched_tokens", "counter",
                                 "Prompt tokens successfully transferred from L3 storage into host memory, "
                                 "before admission-time reuse or discard.", created=False)
        self.backuped = Family("sglang:backuped_tokens", "counter", "Number of backuped tokens.",
                               created=False)

    @property
    def serves(self) -> bool:
        """SGLang serves /metrics only with --enable-metrics."""
        return self.enabled

    def record(self, op: Operation) -> None:
        pass  # SGLang counts tokens moved, not store calls: see prompt().

    def prompt(self, tokens: int, loaded_tokens: int, saved_tokens: int = 0) -> None:
        with self.lock:
            # As SGLang, a counter is only incremented (and so only appears) for more than 0 tokens.
            if loaded_tokens > 0:
                self.prefetched.inc(self.labels, loaded_tokens)
            if saved_tokens > 0:
                self.backuped.inc(self.labels, saved_tokens)

    def render(self) -> str:
        with self.lock:
            lines = [line for f in (self.prefetched, self.backuped) for line in f.render() if f.series]
        return "\n".join(lines) + "\n" if lines else ""
