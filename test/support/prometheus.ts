// A real Prometheus (Debian's package) for the dashboard test: static scrape targets, its own data
// directory and port, the HTTP query API, and a stop that leaves nothing behind.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../local/ports.ts';
import { type ManagedProcess, startProcess } from '../../local/processes.ts';
import { waitFor } from './wait.ts';

export interface ScrapeJob {
  job: string;
  targets: string[];
  labels?: Record<string, string>;
}

export interface QueryResult {
  status: string;
  error?: string;
  data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
}

export class Prometheus {
  readonly url: string;
  private readonly process: ManagedProcess;
  private readonly dir: string;

  private constructor(url: string, process: ManagedProcess, dir: string) {
    this.url = url;
    this.process = process;
    this.dir = dir;
  }

  static async start(jobs: ScrapeJob[], intervalSeconds = 2): Promise<Prometheus> {
    const dir = mkdtempSync(join(tmpdir(), 'kvpool-prometheus-'));
    const config = {
      global: { scrape_interval: `${intervalSeconds}s`, evaluation_interval: `${intervalSeconds}s` },
      scrape_configs: jobs.map((j) => ({
        job_name: j.job,
        static_configs: [{ targets: j.targets, labels: j.labels ?? {} }],
      })),
    };
    writeFileSync(join(dir, 'prometheus.yml'), stringify(config));
    const port = await freePort();
    const process = startProcess('prometheus', '/usr/bin/prometheus', {
      logDir: dir,
      args: [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
    });
    const p = new Prometheus(`http://127.0.0.1:${port}`, process, dir);
    await waitFor(
      async () => {
        process.assertRunning();
        return (await fetch(`${p.url}/-/ready`).catch(() => undefined))?.ok ? true : undefined;
      },
      { what: 'Prometheus ready', timeoutMs: 60_000, intervalMs: 200 },
    );
    return p;
  }

  /** Health of every target, as `job instance: health (last error)`. */
  async targets(): Promise<{ job: string; instance: string; health: string; lastError: string }[]> {
    const body = (await (await fetch(`${this.url}/api/v1/targets`)).json()) as {
      data: { activeTargets: { labels: Record<string, string>; health: string; lastError: string }[] };
    };
    return body.data.activeTargets.map((t) => ({
      job: t.labels.job!,
      instance: t.labels.instance!,
      health: t.health,
      lastError: t.lastError,
    }));
  }

  async query(expr: string): Promise<QueryResult> {
    const res = await fetch(`${this.url}/api/v1/query?${new URLSearchParams({ query: expr })}`);
    return (await res.json()) as QueryResult;
  }

  async stop(): Promise<void> {
    await this.process.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
