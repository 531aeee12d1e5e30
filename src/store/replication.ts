// What the operator reads of a store with replicated metadata (decision 50): each standby master's place
// in the OpLog (its /metrics and /health on the admin port) and each etcd member's /health on its plain
// metrics port. A figure not reported stays absent.
import { StoreAdminClient } from './admin-client.ts';
import { parseHealth } from './observe.ts';
import { gauge, parsePrometheusText } from './prometheus.ts';

/** How long a standby or an etcd member has to answer; the reads run side by side. */
export const replicationReadTimeoutMs = 2000;

export interface StandbyReading {
  pod: string;
  /** The role the master reports (standby while it follows). */
  role?: string;
  /** ha_oplog_standby_lag: entries it is behind the primary. */
  lagEntries?: number;
  /** ha_oplog_applied_sequence_id: the last entry it applied. */
  appliedSequence?: number;
  /** Why it could not be read. */
  error?: string;
}

export interface EtcdMemberReading {
  pod: string;
  healthy: boolean;
  error?: string;
}

const why = (err: unknown) =>
  err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);

/** One standby master at host:port of its admin port. */
export async function readStandby(pod: string, address: string): Promise<StandbyReading> {
  const admin = new StoreAdminClient(address, replicationReadTimeoutMs);
  try {
    const [health, metrics] = await Promise.all([admin.getText('/health'), admin.getText('/metrics')]);
    const families = parsePrometheusText(metrics);
    const lag = gauge(families, 'ha_oplog_standby_lag');
    const applied = gauge(families, 'ha_oplog_applied_sequence_id');
    const { role } = parseHealth(health);
    return {
      pod,
      ...(role ? { role } : {}),
      ...(lag !== undefined && Number.isFinite(lag) ? { lagEntries: lag } : {}),
      ...(applied !== undefined && Number.isFinite(applied) ? { appliedSequence: applied } : {}),
    };
  } catch (err) {
    return { pod, error: `${address}: ${why(err)}` };
  }
}

/** One etcd member's verdict on GET /health at host:port (its plain metrics port). */
export async function readEtcdMember(pod: string, address: string): Promise<EtcdMemberReading> {
  try {
    const res = await fetch(`http://${address}/health`, {
      signal: AbortSignal.timeout(replicationReadTimeoutMs),
      redirect: 'error',
    });
    const body = (await res.json()) as { health?: unknown; reason?: unknown };
    const healthy = res.ok && body.health === 'true';
    return healthy
      ? { pod, healthy }
      : {
          pod,
          healthy,
          error: `HTTP ${res.status}${typeof body.reason === 'string' && body.reason ? `: ${body.reason}` : ''}`,
        };
  } catch (err) {
    return { pod, healthy: false, error: `${address}: ${why(err)}` };
  }
}
