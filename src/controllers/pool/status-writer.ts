// Status writes of a backend's passes, run apart from the passes: the next pass's ledger writes do not
// wait behind them (decision 41). One job runs at a time; a job submitted while another runs replaces
// any job still waiting, since a newer pass's statuses supersede an older one's.
import type { KVCachePool, KVCachePoolBinding, StatusOf } from '../../api/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import { applyStatus } from '../../operator-io/apply.ts';
import { mergeConditions } from '../../vocabulary/conditions.ts';
import type { Decision, StatusFields } from './status.ts';

export type StatusJob = () => Promise<void>;

export class LatestStatusWriter {
  private running: Promise<void> | undefined;
  private waiting: StatusJob | undefined;
  private readonly onError: (err: unknown) => void;

  constructor(onError: (err: unknown) => void) {
    this.onError = onError;
  }

  /** Runs `job` once the job in flight (if any) is done, unless a newer job is submitted first. */
  submit(job: StatusJob): void {
    this.waiting = job;
    this.running ??= this.drain();
  }

  /** Resolves once no job runs or waits. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    for (let job = this.waiting; job; job = this.waiting) {
      this.waiting = undefined;
      try {
        await job();
      } catch (err) {
        this.onError(err);
      }
    }
    this.running = undefined;
  }
}

/** One writer per backend; a failed job is reported with its backend's key (to run that pass again). */
export class StatusWriters {
  private readonly writers = new Map<string, LatestStatusWriter>();
  private readonly onError: (key: string, err: unknown) => void;

  constructor(onError: (key: string, err: unknown) => void) {
    this.onError = onError;
  }

  of(key: string): LatestStatusWriter {
    let writer = this.writers.get(key);
    if (!writer) {
      writer = new LatestStatusWriter((err) => this.onError(key, err));
      this.writers.set(key, writer);
    }
    return writer;
  }
}

/** Writes a pool's or Binding's decided status, its conditions merged with those it holds. */
export async function writeDecision<O extends KVCachePool | KVCachePoolBinding>(
  client: KubeClient,
  obj: O,
  d: Decision<StatusFields<StatusOf<O>>>,
): Promise<void> {
  const conditions = mergeConditions(
    obj.status?.conditions,
    d.conditions,
    obj.metadata.generation,
    new Date(),
  );
  // The decision holds every field but these three, so together they are the kind's whole status.
  const status = { phase: d.phase, phaseMessage: d.phaseMessage, conditions, ...d.status };
  await applyStatus(client, obj, status as StatusOf<O>);
}
