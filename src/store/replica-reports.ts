// What ready engine replicas report about their store operations, read from their /metrics. Engines
// that export no such family report nothing (absent, not zero).
import { request } from 'undici';
import { parsePrometheusText } from './prometheus.ts';

/** Store operations ready replicas reported (undefined: no replica reported any). */
export interface CacheReports {
  successes: number;
  failures: number;
}
/** Store-operation counters an engine replica may export, by the result label. */
const families = ['kvpool_standin_store_operations_total'];

export async function readReplicaReports(
  endpoints: string[],
  timeoutMs = 2000,
): Promise<CacheReports | undefined> {
  let reported = false;
  const total = { successes: 0, failures: 0 };
  await Promise.all(
    endpoints.map(async (endpoint) => {
      try {
        const res = await request(`http://${endpoint}/metrics`, {
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
        if (res.statusCode !== 200) return void (await res.body.dump());
        const parsed = parsePrometheusText(await res.body.text());
        for (const name of families) {
          for (const s of parsed.get(name) ?? []) {
            reported = true;
            if (s.labels.result === 'success') total.successes += s.value;
            else if (s.labels.result === 'failure') total.failures += s.value;
          }
        }
      } catch {
        // A replica that does not answer reports nothing.
      }
    }),
  );
  return reported ? total : undefined;
}
