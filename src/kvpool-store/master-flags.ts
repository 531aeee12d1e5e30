// The few mooncake_master flags kvpool-store must know itself: where the master listens.

export interface MasterEndpoints {
  rpcPort: number;
  metricsPort: number;
  /** The address the admin server binds, when the flags name one. */
  metricsHost: string | undefined;
}

/** The value of a gflags flag in `-name=value`, `--name=value` or `-name value` form; the last one wins. */
export function masterFlag(args: string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const m = /^--?([A-Za-z0-9_]+)(?:=(.*))?$/.exec(args[i]!);
    if (!m || m[1] !== name) continue;
    value = m[2] ?? args[i + 1];
  }
  return value;
}

function portFlag(args: string[], name: string, fallback: number): number {
  const raw = masterFlag(args, name);
  if (raw === undefined) return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`-${name}=${raw} is not a TCP port: give a number from 1 to 65535`);
  }
  return port;
}

export function masterEndpoints(args: string[]): MasterEndpoints {
  const host = masterFlag(args, 'metrics_host');
  return {
    rpcPort: portFlag(args, 'rpc_port', 50051),
    metricsPort: portFlag(args, 'metrics_port', 9003),
    metricsHost: host && host !== '0.0.0.0' ? host : undefined,
  };
}
