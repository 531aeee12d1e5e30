"""The Mooncake client configuration of the engine stand-in, read the way each engine reads it: vLLM's
MooncakeStoreConnector from the JSON file at MOONCAKE_CONFIG_PATH, SGLang's HiCache mooncake backend
from its extra-config flag, SGLANG_HICACHE_MOONCAKE_CONFIG_PATH or the MOONCAKE_* environment.
"""

import json
import socket
from dataclasses import dataclass, field

from engine_standin_flags import ServerArgs
from engine_standin_log import log

# SGLang hardcodes its local transfer buffer.
SGLANG_LOCAL_BUFFER_BYTES = 16 << 20
GiB = 1 << 30


class ConfigError(Exception):
    """The Mooncake configuration the engine would read is missing or malformed."""


@dataclass
class StoreSettings:
    connector: str
    source: str
    master_address: str
    metadata_server: str
    protocol: str
    device: str
    local_hostname: str
    global_segment_size: int
    local_buffer_size: int
    tenant_id: str
    key_prefix: str = ""
    saves: bool = True
    details: dict = field(default_factory=dict)


def parse_byte_size(value, what: str) -> int:
    """vLLM's config sizes: an integer, or a string with a B/KB/MB/GB/TB suffix (binary units)."""
    if isinstance(value, bool):
        raise ConfigError(f"{what} must be a size, not {value!r}")
    if isinstance(value, int):
        return value
    text = str(value).strip().lower().replace(" ", "")
    for suffix, shift in (("tb", 40), ("gb", 30), ("mb", 20), ("kb", 10), ("b", 0)):
        if text.endswith(suffix) and text[: -len(suffix)]:
            try:
                return int(float(text[: -len(suffix)]) * (1 << shift))
            except ValueError:
                break
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{what} {value!r} is not a size (an integer, or a number with KB/MB/GB/TB)")


def parse_sglang_segment_size(value: str) -> int:
    """SGLang parses MOONCAKE_GLOBAL_SEGMENT_SIZE as a plain integer or a number with a `gb` suffix only."""
    text = value.strip().lower()
    try:
        if text.endswith("gb"):
            return int(float(text[:-2]) * GiB)
        return int(text)
    except ValueError:
        raise ConfigError(
            f"MOONCAKE_GLOBAL_SEGMENT_SIZE={value!r} does not parse: SGLang accepts only a plain integer "
            "(bytes) or a number with a `gb` suffix, such as 4gb"
        )


def store_connector_in(kv_transfer_config: dict) -> dict | None:
    """The MooncakeStoreConnector entry of --kv-transfer-config, also when wrapped in a MultiConnector."""
    if kv_transfer_config.get("kv_connector") == "MooncakeStoreConnector":
        return kv_transfer_config
    if kv_transfer_config.get("kv_connector") == "MultiConnector":
        extra = kv_transfer_config.get("kv_connector_extra_config") or {}
        for inner in extra.get("connectors") or []:
            if isinstance(inner, dict) and inner.get("kv_connector") == "MooncakeStoreConnector":
                return inner
    return None


def local_pod_ip(env) -> str | None:
    """The Pod's own address: POD_IP when a manifest sets it, else the local cluster's runtime hint."""
    return env.get("POD_IP") or env.get("KVPOOL_LOCAL_POD_IP") or None


def vllm_local_hostname(args: ServerArgs, env) -> str:
    if env.get("MOONCAKE_LOCAL_HOSTNAME"):
        return env["MOONCAKE_LOCAL_HOSTNAME"]
    if local_pod_ip(env):
        return local_pod_ip(env)
    if args.host and args.host not in ("0.0.0.0", "::"):
        return args.host
    return "127.0.0.1"


def vllm_store_settings(args: ServerArgs, env) -> StoreSettings | None:
    if args.kv_transfer_config is None:
        return None
    connector = store_connector_in(args.kv_transfer_config)
    if connector is None:
        log(
            "no MooncakeStoreConnector in --kv-transfer-config: running without the shared cache",
            kv_connector=args.kv_transfer_config.get("kv_connector"),
        )
        return None
    path = env.get("MOONCAKE_CONFIG_PATH")
    if not path:
        raise ConfigError("MooncakeStoreConnector needs MOONCAKE_CONFIG_PATH, the Mooncake JSON config file")
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, json.JSONDecodeError) as err:
        raise ConfigError(f"cannot read MOONCAKE_CONFIG_PATH={path}: {err}")
    if not isinstance(config, dict):
        raise ConfigError(f"MOONCAKE_CONFIG_PATH={path} does not hold a JSON object")
    master = config.get("master_server_address")
    if not master:
        raise ConfigError(f"MOONCAKE_CONFIG_PATH={path} has no master_server_address")
    mode = config.get("mode", "embedded")
    segment = parse_byte_size(config.get("global_segment_size", 4 * GiB), "global_segment_size")
    extra = connector.get("kv_connector_extra_config") or {}
    prefix = extra.get("cache_prefix") or ""
    role = connector.get("kv_role", "kv_both")
    return StoreSettings(
        connector="MooncakeStoreConnector",
        source=f"MOONCAKE_CONFIG_PATH={path}",
        master_address=str(master),
        metadata_server=str(config.get("metadata_server", "P2PHANDSHAKE")),
        protocol=str(config.get("protocol", "rdma")),
        device=str(config.get("device_name", "")),
        local_hostname=vllm_local_hostname(args, env),
        # A standalone-store client contributes no memory; the members do.
        global_segment_size=0 if mode == "standalone-store" else segment,
        local_buffer_size=parse_byte_size(config.get("local_buffer_size", 4 * GiB), "local_buffer_size"),
        tenant_id=str(config.get("tenant_id", "")),
        key_prefix=f"{prefix}@" if prefix else "",
        # A consumer loads from the store but never writes to it.
        saves=role != "kv_consumer",
        details={"mode": mode, "kv_role": role},
    )


def sglang_config_source(args: ServerArgs, env) -> tuple[str, dict] | None:
    """SGLang reads --hicache-storage-backend-extra-config first, then SGLANG_HICACHE_MOONCAKE_CONFIG_PATH."""
    if args.storage_extra_config is not None:
        return "--hicache-storage-backend-extra-config", args.storage_extra_config
    path = env.get("SGLANG_HICACHE_MOONCAKE_CONFIG_PATH")
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                return f"SGLANG_HICACHE_MOONCAKE_CONFIG_PATH={path}", json.load(f)
        except (OSError, json.JSONDecodeError) as err:
            raise ConfigError(f"cannot read SGLANG_HICACHE_MOONCAKE_CONFIG_PATH={path}: {err}")
    return None


def sglang_store_settings(args: ServerArgs, env) -> StoreSettings | None:
    if args.storage_backend is None:
        return None
    if args.storage_backend != "mooncake":
        log("--hicache-storage-backend is not mooncake: no shared cache", backend=args.storage_backend)
        return None
    if not args.hierarchical_cache:
        # The decode half of a prefill/decode pair names the backend without the hierarchical cache.
        log("--hicache-storage-backend without --enable-hierarchical-cache: using the store anyway")
    from_file = sglang_config_source(args, env)
    if from_file is not None:
        source, config = from_file
        master = config.get("master_server_address")
        if not master:
            raise ConfigError(f"{source} has no master_server_address")
        segment = config.get("global_segment_size", 4 * GiB)
        values = {
            "master": str(master),
            "meta": str(config.get("metadata_server", "P2PHANDSHAKE")),
            "protocol": str(config.get("protocol", "rdma")),
            "device": str(config.get("device_name", "")),
            "hostname": str(config.get("local_hostname", "localhost")),
            "segment": segment if isinstance(segment, int) else parse_sglang_segment_size(str(segment)),
            "tenant": str(config.get("tenant_id", env.get("MOONCAKE_TENANT_ID", ""))),
        }
    else:
        source = "environment"
        if not env.get("MOONCAKE_MASTER"):
            raise ConfigError("the mooncake storage backend needs MOONCAKE_MASTER (host:port of the master)")
        values = {
            "master": env["MOONCAKE_MASTER"],
            "meta": env.get("MOONCAKE_TE_META_DATA_SERVER", "P2PHANDSHAKE"),
            "protocol": env.get("MOONCAKE_PROTOCOL", "rdma"),
            "device": env.get("MOONCAKE_DEVICE", ""),
            "hostname": env.get("MOONCAKE_LOCAL_HOSTNAME", "localhost"),
            "segment": parse_sglang_segment_size(env.get("MOONCAKE_GLOBAL_SEGMENT_SIZE", "4gb")),
            "tenant": env.get("MOONCAKE_TENANT_ID", ""),
        }
    return StoreSettings(
        connector="mooncake",
        source=source,
        master_address=values["master"],
        metadata_server=values["meta"],
        protocol=values["protocol"],
        device=values["device"],
        local_hostname=values["hostname"],
        global_segment_size=values["segment"],
        local_buffer_size=SGLANG_LOCAL_BUFFER_BYTES,
        tenant_id=values["tenant"],
    )


def check_master_resolves(address: str) -> str | None:
    """The master's host, resolved as the client library will resolve it (through /etc/hosts)."""
    if "://" in address:
        return None  # An etcd/redis view of the leader, resolved by the client library itself.
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"master address {address!r} is not host:port")
    try:
        return socket.getaddrinfo(host, int(port), socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except OSError as err:
        raise ConfigError(f"master host {host!r} does not resolve: {err}")
