// Which Mooncake minor line a store image runs and an engine's embedded client speaks. Store and
// client interoperate only within one line (a mismatch starts healthy, then fails every write), so
// the doctor compares the two. Pure.
import type { ModelDeployment } from '../api/types.ts';

/** Engine versions whose store client is known: [engine, version prefix, client line]. */
const engineClients: [string, string, string][] = [
  ['vLLM', '0.29.', '0.3.13'],
  ['SGLang', '0.5.18.', '0.3.12'],
];

/** The Mooncake line in a store image reference (`…mooncake0.3.13.post1`, `mooncake:0.3.12.post1-cpu`). */
export function storeLine(image: string): string | undefined {
  const tag = image.slice(image.lastIndexOf('/') + 1);
  const embedded = /mooncake[-_]?v?(\d+\.\d+\.\d+)/i.exec(tag);
  if (embedded) return minor(embedded[1]!);
  const [repo = '', version = ''] = tag.split(':');
  if (!/mooncake/i.test(repo)) return undefined;
  const m = /^v?(\d+\.\d+\.\d+)/.exec(version);
  return m ? minor(m[1]!) : undefined;
}

const minor = (v: string) => v.split('.').slice(0, 3).join('.');

/** The engine version a deployment runs: from its image tag (`…-vllm0.29.0`), else spec.engine.version. */
export function engineVersion(md: ModelDeployment): string | undefined {
  const engine = md.spec.engine.name === 'SGLang' ? 'sglang' : 'vllm';
  for (const image of [...md.spec.roles.map((r) => r.image), md.spec.engine.image]) {
    const m =
      image && new RegExp(`${engine}-?v?(\\d+\\.\\d+\\.\\d+)`, 'i').exec(image.slice(image.lastIndexOf(':')));
    if (m) return m[1];
  }
  return md.spec.engine.version;
}

/** The client line an engine's embedded store client speaks, when its version is known here. */
export function clientLine(engine: string, version: string | undefined): string | undefined {
  if (!version) return undefined;
  return engineClients.find(([e, prefix]) => e === engine && `${version}.`.startsWith(prefix))?.[2];
}
