// Reads a real engine's own Prometheus figures from its API port.
import { parsePrometheusText } from '../../src/store/prometheus.ts';

/** One family summed over its samples whose labels match `where`; undefined when not exported. */
export async function engineFigure(ip: string, family: string, where: Record<string, string> = {}) {
  const text = await (await fetch(`http://${ip}:8000/metrics`)).text();
  const samples = (parsePrometheusText(text).get(family) ?? []).filter((s) =>
    Object.entries(where).every(([k, v]) => s.labels[k] === v),
  );
  return samples.length ? samples.reduce((sum, s) => sum + s.value, 0) : undefined;
}
