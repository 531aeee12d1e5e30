// Drives the real Mooncake client library (Python) for put/get checks against a real master.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { mooncakeBinary } from '../../local/toolchain.ts';

export type StoreOp = { op: 'put'; key: string; data: Buffer } | { op: 'get'; key: string };
/** A get's result carries how long it took (`ms`) and when it ended (`at`, ms since the epoch). */
export type StoreResult = ({ rc: number } | { data: Buffer }) & { ms?: number; at?: number };

export interface StoreClientOptions {
  master: string;
  /** The client's own loopback address. */
  host: string;
  tenant?: string;
}

export async function runStoreClient(options: StoreClientOptions, ops: StoreOp[]): Promise<StoreResult[]> {
  const args = [
    join(import.meta.dirname, 'store_client.py'),
    '--master',
    options.master,
    '--host',
    options.host,
  ];
  if (options.tenant !== undefined) args.push('--tenant', options.tenant);
  const child = spawn(mooncakeBinary('python'), args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const wire = ops.map((o) => (o.op === 'put' ? { op: 'put', key: o.key, hex: o.data.toString('hex') } : o));
  child.stdin.end(JSON.stringify(wire));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  const last = stdout.trim().split('\n').at(-1) ?? '';
  let parsed: {
    setup: number;
    results?: (({ rc: number } | { hex: string }) & { ms?: number; at?: number })[];
  };
  try {
    parsed = JSON.parse(last);
  } catch {
    throw new Error(`store client exited ${code} without a result; stderr:\n${stderr.slice(-2000)}`);
  }
  if (parsed.setup !== 0)
    throw new Error(`store client setup returned ${parsed.setup}; stderr:\n${stderr.slice(-2000)}`);
  // A put's times are left out, so a put compares equal to { rc }.
  return (parsed.results ?? []).map((r) =>
    'hex' in r ? { data: Buffer.from(r.hex, 'hex'), ms: r.ms, at: r.at } : { rc: r.rc },
  );
}
