"""The command-line flags of `vllm serve` and `python3 -m sglang.launch_server` that the engine stand-in
models. Flags it does not model are accepted and reported back, so a container's real argv runs
unchanged; a flag value a real engine would refuse (such as a KV-cache dtype spelling) is refused.
"""

import json
from dataclasses import dataclass, field


class UsageError(Exception):
    """The arguments would make the real engine exit at argument parsing."""


# Accepted --kv-cache-dtype spellings (vLLM v0.29.0 / SGLang v0.5.18); each engine rejects the others'.
VLLM_DTYPES = ("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla", "nvfp4")
SGLANG_DTYPES = ("auto", "bfloat16", "bf16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "nvfp4", "fp4_mx_block16")

# Switches of the real engines: they take no value, so the word after them is not swallowed.
KNOWN_SWITCHES = {
    "--trust-remote-code",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--enforce-eager",
    "--disable-log-requests",
    "--disable-log-stats",
    "--enable-chunked-prefill",
    "--no-enable-chunked-prefill",
    "--disable-radix-cache",
    "--enable-metrics",
    "--skip-server-warmup",
}


@dataclass
class ServerArgs:
    engine: str
    model: str
    served_model_name: str
    host: str | None
    port: int
    dtype: str
    block_size: int
    kv_transfer_config: dict | None = None
    storage_backend: str | None = None
    storage_extra_config: dict | None = None
    hierarchical_cache: bool = False
    # Whether /metrics is served: always by vLLM, by SGLang only with --enable-metrics.
    metrics: bool = True
    ignored: list[str] = field(default_factory=list)


@dataclass
class Scanned:
    positionals: list[str] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)
    switches: set[str] = field(default_factory=set)
    ignored: list[str] = field(default_factory=list)


def scan(argv: list[str], value_flags: set[str], switches: set[str], multi: set[str]) -> Scanned:
    """Splits argv into modelled flags (`--flag value` or `--flag=value`), positionals and the rest."""
    out = Scanned()
    i = 0
    while i < len(argv):
        token = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if token == "--":
            out.positionals.extend(argv[i + 1 :])
            break
        if not token.startswith("--"):
            if token.startswith("-") and len(token) > 1:
                out.ignored.append(token if nxt is None or nxt.startswith("-") else f"{token} {nxt}")
                i += 1 if nxt is None or nxt.startswith("-") else 2
                continue
            out.positionals.append(token)
            i += 1
            continue
        raw, eq, inline = token.partition("=")
        name = "--" + raw[2:].replace("_", "-")
        if name in value_flags:
            if eq:
                out.values[name] = inline
            elif nxt is None:
                raise UsageError(f"argument {name}: expected one argument")
            else:
                out.values[name] = nxt
                i += 1
            i += 1
            # nargs="+" flags: later words are further names, the first one is used.
            while name in multi and not eq and i < len(argv) and not argv[i].startswith("-"):
                out.ignored.append(f"{name} … {argv[i]}")
                i += 1
            continue
        if name in switches:
            out.switches.add(name)
            i += 1
            continue
        takes_value = not eq and nxt is not None and not nxt.startswith("-") and name not in KNOWN_SWITCHES
        out.ignored.append(f"{token} {nxt}" if takes_value else token)
        i += 2 if takes_value else 1
    return out


def parse_int(flag: str, value: str, minimum: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"argument {flag}: invalid int value: {value!r}")
    if number < minimum:
        raise UsageError(f"argument {flag}: must be at least {minimum}, got {number}")
    return number


def parse_json_object(flag: str, value: str) -> dict:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as err:
        raise UsageError(f"argument {flag}: not valid JSON ({err}): {value}")
    if not isinstance(parsed, dict):
        raise UsageError(f"argument {flag}: expected a JSON object, got {value}")
    return parsed


def parse_dtype(value: str, accepted: tuple[str, ...]) -> str:
    if value not in accepted:
        choices = ", ".join(repr(d) for d in accepted)
        raise UsageError(f"argument --kv-cache-dtype: invalid choice: {value!r} (choose from {choices})")
    return value


def parse_vllm_args(argv: list[str]) -> ServerArgs:
    if not argv or argv[0] != "serve":
        raise UsageError("this stand-in models only `vllm serve <model> [flags]`")
    flags = {"--model", "--served-model-name", "--host", "--port", "--kv-transfer-config",
             "--kv-cache-dtype", "--block-size"}
    s = scan(argv[1:], flags, set(), {"--served-model-name"})
    model = s.values.get("--model") or (s.positionals[0] if s.positionals else None)
    if not model:
        raise UsageError("vllm serve needs a model: `vllm serve <model>` or --model")
    s.ignored.extend(f"(positional) {p}" for p in s.positionals[1:])
    config = s.values.get("--kv-transfer-config")
    return ServerArgs(
        engine="vllm",
        model=model,
        served_model_name=s.values.get("--served-model-name") or model,
        host=s.values.get("--host"),
        port=parse_int("--port", s.values.get("--port", "8000"), 0),
        dtype=parse_dtype(s.values.get("--kv-cache-dtype", "auto"), VLLM_DTYPES),
        block_size=parse_int("--block-size", s.values.get("--block-size", "16"), 1),
        kv_transfer_config=parse_json_object("--kv-transfer-config", config) if config else None,
        ignored=s.ignored,
    )


def parse_sglang_args(argv: list[str]) -> ServerArgs:
    flags = {"--model-path", "--model", "--served-model-name", "--host", "--port", "--kv-cache-dtype",
             "--page-size", "--hicache-storage-backend", "--hicache-storage-backend-extra-config"}
    s = scan(argv, flags, {"--enable-hierarchical-cache", "--enable-metrics"}, set())
    model = s.values.get("--model-path") or s.values.get("--model")
    if not model:
        raise UsageError("the following arguments are required: --model-path")
    s.ignored.extend(f"(positional) {p}" for p in s.positionals)
    extra_flag = "--hicache-storage-backend-extra-config"
    extra = s.values.get(extra_flag)
    return ServerArgs(
        engine="sglang",
        model=model,
        served_model_name=s.values.get("--served-model-name") or model,
        host=s.values.get("--host", "127.0.0.1"),
        port=parse_int("--port", s.values.get("--port", "30000"), 0),
        dtype=parse_dtype(s.values.get("--kv-cache-dtype", "auto"), SGLANG_DTYPES),
        block_size=parse_int("--page-size", s.values.get("--page-size", "1"), 1),
        storage_backend=s.values.get("--hicache-storage-backend"),
        storage_extra_config=parse_json_object(extra_flag, extra) if extra else None,
        hierarchical_cache="--enable-hierarchical-cache" in s.switches,
        metrics="--enable-metrics" in s.switches,
        ignored=s.ignored,
    )


def parse_server_args(engine: str, argv: list[str]) -> ServerArgs:
    return parse_vllm_args(argv) if engine == "vllm" else parse_sglang_args(argv)
