// One observation of a master: /health, then /metrics, then /get_segments_detail, each read once.
// Every figure is kept as read; a figure the store did not report stays absent, never zero.
import { BackendReason } from '../api/kvcache-backend-conditions.ts';
import { formatQuantity } from '../kube/readable-quantity.ts';
import { failure, StoreAdminClient, StoreUnreachable } from './admin-client.ts';
import { type Families, gaugeBytes, parsePrometheusText } from './prometheus.ts';

export type Reading<T, R extends string = string> =
  | { ok: true; value: T }
  | { ok: false; reason: R; message: string };

export interface Health {
  serviceReady: boolean;
  role?: string;
  haState?: string;
  leaderAddress?: string;
  viewVersion?: number;
}

export interface Segment {
  segmentId: string;
  clientId?: string;
  segmentName?: string;
  teEndpoint?: string;
  protocol?: string;
  status?: string;
  usedBytes?: number;
  capacityBytes?: number;
}

export type SegmentListing = { served: true; segments: Segment[] } | { served: false };

export interface StoreObservation {
  address: string;
  at: number;
  health: Reading<Health>;
  metrics?: Reading<Families>;
  segments?: Reading<
    SegmentListing,
    typeof BackendReason.ListingFailed | typeof BackendReason.ListingTooLarge
  >;
}

export const segmentListingCap = 5000;
export const segmentIdentifierCap = 512 * 1024;

function failed<T, R extends string>(reason: R, err: unknown): Reading<T, R> {
  return { ok: false, reason, message: err instanceof Error ? err.message : String(err) };
}

export function parseHealth(body: string): Health {
  const h = JSON.parse(body) as {
    service_ready?: unknown;
    role?: string;
    ha_state?: string;
    leader_address?: unknown;
    view_version?: unknown;
  };
  if (typeof h.service_ready !== 'boolean') throw new Error('the /health reply has no service_ready verdict');
  return {
    serviceReady: h.service_ready,
    role: h.role,
    haState: h.ha_state,
    // In HA mode: the serving master etcd names, and the number of that view (absent otherwise).
    ...(typeof h.leader_address === 'string' && h.leader_address ? { leaderAddress: h.leader_address } : {}),
    ...(typeof h.view_version === 'number' ? { viewVersion: h.view_version } : {}),
  };
}

export function parseSegments(body: string): Segment[] {
  const d = (JSON.parse(body) ?? {}) as { segments?: Record<string, unknown>[] };
  if (!Array.isArray(d.segments)) throw new Error('the /get_segments_detail reply has no segments field');
  const identifierBytes = d.segments.reduce(
    (n, s) =>
      n +
      String(s.segment_id ?? '').length +
      String(s.client_id ?? '').length +
      String(s.segment_name ?? '').length,
    0,
  );
  if (d.segments.length > segmentListingCap || identifierBytes > segmentIdentifierCap) {
    throw new ListingTooLarge(d.segments.length, identifierBytes);
  }
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return d.segments.map((s) => ({
    segmentId: str(s.segment_id) ?? '',
    clientId: str(s.client_id),
    segmentName: str(s.segment_name),
    teEndpoint: str(s.te_endpoint),
    protocol: str(s.protocol),
    status: str(s.status),
    usedBytes: num(s.allocator_used_bytes),
    capacityBytes: num(s.allocator_capacity_bytes),
  }));
}

export class ListingTooLarge extends Error {
  constructor(entries: number, identifierBytes: number) {
    super(
      `the master lists ${entries} segments with ${formatQuantity(identifierBytes)} of identifiers, more than the ${segmentListingCap} entries or ${formatQuantity(segmentIdentifierCap)} this operator reads`,
    );
    this.name = ListingTooLarge.name;
  }
}

/** Reads health, metrics and the segment listing from one master, sequentially, each once. */
export async function observeStore(address: string, timeoutMs?: number): Promise<StoreObservation> {
  const client = new StoreAdminClient(address, timeoutMs);
  const at = Date.now();
  let health: Reading<Health>;
  try {
    health = { ok: true, value: parseHealth(await client.getText('/health')) };
  } catch (err) {
    return {
      address,
      at,
      health: failed(err instanceof StoreUnreachable ? 'Unreachable' : 'Malformed', err),
    };
  }
  let metrics: Reading<Families>;
  try {
    metrics = { ok: true, value: parsePrometheusText(await client.getText('/metrics')) };
  } catch (err) {
    metrics = failed(BackendReason.ScrapeFailed, err);
  }
  let segments: StoreObservation['segments'];
  try {
    const res = await client.call('GET', '/get_segments_detail');
    if (res.status === 404) segments = { ok: true, value: { served: false } };
    else if (res.status !== 200)
      segments = failed(BackendReason.ListingFailed, failure('GET /get_segments_detail', res));
    else segments = { ok: true, value: { served: true, segments: parseSegments(res.body) } };
  } catch (err) {
    segments = failed(
      err instanceof ListingTooLarge ? BackendReason.ListingTooLarge : BackendReason.ListingFailed,
      err,
    );
  }
  return { address, at, health, metrics, segments };
}

const maxInt64 = (1n << 63n) - 1n;

export interface Capacity {
  total: bigint;
  used: bigint;
}

/**
 * Capacity as the master reports it: memory only, or memory plus the file tier (a disk tier, or any
 * external store). Undefined when a family it needs is missing.
 */
export function capacityFrom(families: Families, includeFiles: boolean): Capacity | undefined {
  // Exact at any size; a reading that is not a finite number is no reading.
  const read = (name: string) => gaugeBytes(families, name);
  const names = ['master_total_capacity_bytes', 'master_allocated_bytes'];
  if (includeFiles) names.push('master_total_file_capacity_bytes', 'master_allocated_file_size_bytes');
  const values = names.map(read);
  if (values.some((v) => v === undefined)) return undefined;
  const [memTotal, memUsed, fileTotal = 0n, fileUsed = 0n] = values as bigint[];
  const saturate = (v: bigint) => (v > maxInt64 ? maxInt64 : v);
  return { total: saturate(memTotal! + fileTotal), used: saturate(memUsed! + fileUsed) };
}
