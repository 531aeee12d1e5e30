// Where a process's memory is when its resident set is highest: VmRSS and its mappings read from /proc
// every interval, beside the V8 figures its own /metrics report (prom-client's default metrics). The
// operator's /metrics carries a series per Binding, so it is scraped only when the resident set has
// grown by a MiB, at most every 3 s: scraping it every interval would itself add to what is measured.
import { readFileSync } from 'node:fs';
import { parsePrometheusText } from '../src/store/prometheus.ts';
import { round } from './results.ts';

const MiB = 1024 * 1024;

export interface MemorySample {
  /** What the bench was doing (the last `phase` named). */
  phase: string;
  rssMiB: number;
  /** V8's heap, from the last scrape: reserved, in use, and reserved per space (new, old, code, ...). */
  heapTotalMiB: number;
  heapUsedMiB: number;
  heapSpacesMiB: Record<string, number>;
  /** Memory outside the heap held by JavaScript objects (Buffers, TLS and HTTP/2 sessions' buffers). */
  externalMiB: number;
  /** The resident set neither the heap nor external memory explains: Node's binary, code, malloc'd buffers. */
  restMiB: number;
  /** The resident set by mapping: the malloc heap, Node's binary, and anonymous mappings by size. */
  mappingsMiB: Record<string, number>;
}

/** /proc/<pid>/smaps summed by kind of mapping. */
function residentByMapping(pid: number): Record<string, number> {
  const kib: Record<string, number> = {};
  let kind = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const size = (Number.parseInt(head[2]!, 16) - Number.parseInt(head[1]!, 16)) / MiB;
      const name = head[3]!;
      kind = name
        ? name.startsWith('/')
          ? name.split('/').at(-1)!
          : name
        : size >= 60
          ? 'anonymous >= 60 MiB (malloc arenas, V8 reservations)'
          : size >= 1
            ? 'anonymous 1-60 MiB'
            : 'anonymous < 1 MiB';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) kib[kind] = (kib[kind] ?? 0) + Number(rss[1]);
  }
  return Object.fromEntries(
    Object.entries(kib)
      .filter(([, v]) => v >= 1024)
      .sort(([, a], [, b]) => b - a)
      .map(([k, v]) => [k, round(v / 1024, 1)]),
  );
}

function vmRssMiB(pid: number): number {
  const kib = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib) / 1024;
}

export class MemorySampler {
  private phase = 'start';
  private peak: MemorySample | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sampling: Promise<void> = Promise.resolve();
  private lastScrape = 0;
  private v8 = {
    heapTotalMiB: 0,
    heapUsedMiB: 0,
    heapSpacesMiB: {} as Record<string, number>,
    externalMiB: 0,
  };

  private readonly pid: number;
  private readonly metricsUrl: string;
  private readonly intervalMs: number;

  constructor(pid: number, metricsUrl: string, intervalMs = 200) {
    this.pid = pid;
    this.metricsUrl = metricsUrl;
    this.intervalMs = intervalMs;
  }

  start(phase: string): void {
    this.phase = phase;
    this.timer = setInterval(() => {
      this.sampling = this.sampling.then(() => this.sample()).catch(() => {});
    }, this.intervalMs);
  }

  mark(phase: string): void {
    this.phase = phase;
  }

  async stop(): Promise<MemorySample | undefined> {
    clearInterval(this.timer);
    await this.sampling;
    return this.peak;
  }

  private async sample(): Promise<void> {
    const phase = this.phase;
    const rss = vmRssMiB(this.pid);
    if (this.peak && rss <= this.peak.rssMiB) return;
    if ((!this.peak || rss >= this.peak.rssMiB + 1) && Date.now() - this.lastScrape >= 3000) {
      this.lastScrape = Date.now();
      this.v8 = await this.scrape();
    }
    this.peak = {
      phase,
      rssMiB: round(rss, 1),
      ...this.v8,
      restMiB: round(rss - this.v8.heapTotalMiB - this.v8.externalMiB, 1),
      mappingsMiB: residentByMapping(this.pid),
    };
  }

  private async scrape() {
    const families = parsePrometheusText(await (await fetch(this.metricsUrl)).text());
    const mib = (name: string) => round((families.get(name)?.[0]?.value ?? 0) / MiB, 1);
    return {
      heapTotalMiB: mib('nodejs_heap_size_total_bytes'),
      heapUsedMiB: mib('nodejs_heap_size_used_bytes'),
      heapSpacesMiB: Object.fromEntries(
        (families.get('nodejs_heap_space_size_total_bytes') ?? []).map((s) => [
          s.labels.space ?? '?',
          round(s.value / MiB, 1),
        ]),
      ),
      externalMiB: mib('nodejs_external_memory_bytes'),
    };
  }
}
