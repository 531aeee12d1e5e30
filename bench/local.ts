// `npm run bench -- local`: the local cluster as `npm start` runs it. Time from start to `kvpool ready`
// (median of runs), then the whole cluster's idle cost: CPU over a minute and resident memory of
// every process it runs (control plane, operator, nodes' containerd/kubelet/kube-proxy, shims and
// the Pods' containers). Writes bench/results/local.json.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../images/toolchain.ts';
import { processesIn } from '../local/nodes/cgroups.ts';
import { slotCgroup, slotOfAddress } from '../local/nodes/host-network.ts';
import { descendants } from '../local/process-tree.ts';
import { median, writeResult } from './results.ts';

const runs = Number(process.env.BENCH_RUNS ?? 3);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 60);
const ticksPerSecond = 100;

function cpuTicks(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

function rssKiB(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

async function startCluster(root: string): Promise<{ cli: ChildProcess; ms: number; output: () => string }> {
  const t0 = performance.now();
  const cli = spawn(process.execPath, [join(projectRoot, 'local/cli.ts'), '--root', root], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  cli.stdout?.on('data', (d) => {
    output += d;
  });
  cli.stderr?.on('data', (d) => {
    output += d;
  });
  while (!output.includes('kvpool ready')) {
    if (cli.exitCode !== null) throw new Error(`the local cluster exited:\n${output}`);
    await sleep(50);
  }
  return { cli, ms: performance.now() - t0, output: () => output };
}

async function stop(cli: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => cli.once('exit', resolve));
  cli.kill('SIGINT');
  await exited;
}

const readyMs: number[] = [];
let idle: { cpuPercentOfOneCore: number; rssMiB: number; processes: number } | undefined;
for (let i = 0; i < runs; i++) {
  const root = mkdtempSync(join(tmpdir(), 'kvpool-bench-local-'));
  const { cli, ms, output } = await startCluster(root);
  readyMs.push(Math.round(ms));
  console.log(`run ${i + 1}: kvpool ready after ${Math.round(ms)} ms`);
  if (i === runs - 1) {
    const server = /server: https:\/\/([\d.]+):/.exec(readFileSync(join(root, 'kubeconfig'), 'utf8'))?.[1];
    const slot = slotOfAddress(server ?? output());
    const pids = () => [...new Set([...descendants(cli.pid!), ...processesIn(slotCgroup(slot))])];
    await sleep(10_000); // let start-up work settle
    const before = new Map(pids().map((p) => [p, cpuTicks(p)]));
    await sleep(idleSeconds * 1000);
    const now = pids();
    const ticks = now.reduce((sum, p) => sum + cpuTicks(p) - (before.get(p) ?? 0), 0);
    idle = {
      cpuPercentOfOneCore: Math.round((ticks / ticksPerSecond / idleSeconds) * 1000) / 10,
      rssMiB: Math.round(now.reduce((sum, p) => sum + rssKiB(p), 0) / 1024),
      processes: now.length,
    };
    console.log(`idle over ${idleSeconds} s: ${JSON.stringify(idle)}`);
  }
  await stop(cli);
  rmSync(root, { recursive: true, force: true });
}

const result = {
  nodes: 2,
  readyMs: { runs: readyMs, median: median(readyMs) },
  idle,
  note: 'start to `kvpool ready` with images and the prepared node image store cached; idle = CPU and RSS of every process of the cluster, nothing applied',
};
console.log(`wrote ${writeResult('local', result)}`);
