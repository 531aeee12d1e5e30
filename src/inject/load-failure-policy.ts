// vLLM's kv_load_failure_policy as an argv sets it: a key of --kv-transfer-config, given whole as JSON or
// field by field (`--kv-transfer-config.kv_load_failure_policy fail`). vLLM gathers the field-by-field
// spellings into one JSON object it passes after every other argument, so they replace a whole one.
import { flagKey } from './argv.ts';
import { type EngineFamily, engineDisplayNames, isVllmFamily, loadFailurePolicyAnnotation } from './types.ts';

const flag = '--kv-transfer-config';
const policyKey = 'kv_load_failure_policy';
/** The connectors that read the store kvpool runs. */
const storeConnectors = new Set(['MooncakeStoreConnector', 'AscendStoreConnector']);

/** What `args[i]` gives --kv-transfer-config: a field (`path` after the flag), or the whole object. */
interface KvTransferArg {
  field?: string;
  value: string | undefined;
  /** The argument that names what is set: a field's flag, or the whole object's value. */
  at: number;
}

function kvTransferArg(engine: EngineFamily, args: readonly string[], i: number): KvTransferArg | undefined {
  const arg = args[i]!;
  if (!isVllmFamily(engine) || flagKey(engine, arg) !== flag) return undefined;
  const key = arg.split('=', 1)[0]!;
  const dot = key.indexOf('.');
  const inline = arg.includes('=');
  const value = inline ? arg.slice(arg.indexOf('=') + 1) : args[i + 1];
  return dot < 0 ? { value, at: inline ? i : i + 1 } : { field: key.slice(dot + 1), value, at: i };
}

function parseObject(text: string | undefined): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text ?? '');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The policy `args[i]` sets, when it sets one (`value` undefined when the argv ends before it). */
export function loadFailurePolicySetBy(
  engine: EngineFamily,
  args: readonly string[],
  i: number,
): { value: string | undefined } | undefined {
  const a = kvTransferArg(engine, args, i);
  if (!a) return undefined;
  if (a.field !== undefined) return a.field === policyKey ? { value: a.value } : undefined;
  const whole = parseObject(a.value);
  return whole && policyKey in whole ? { value: String(whole[policyKey]) } : undefined;
}

/**
 * The refusal of an argument that sets the policy the injection writes: the rule, and the annotation
 * that asks for `fail` on purpose. Either value is refused: a second --kv-transfer-config would replace
 * the injected one.
 */
export function policyArgRefusal(
  engine: EngineFamily,
  path: string,
  arg: string,
  value: string | undefined,
  scope: 'role' | 'pod',
): string {
  const spelled = arg.split('=', 1)[0]!;
  const writer = scope === 'pod' ? 'the injection' : 'the operator';
  const kind = scope === 'pod' ? 'Pod' : 'ModelDeployment';
  const to = value === undefined ? '' : ` to ${value}`;
  return `${path}: ${spelled} sets ${policyKey}${to}, which ${writer} writes on ${engineDisplayNames[engine]}: recompute, so a load from the store that fails or stalls is computed again instead of failing the request with HTTP 500; remove it (a second ${flag} would replace the connector's), and to fail such requests on purpose annotate the ${kind} ${loadFailurePolicyAnnotation}: "fail"`;
}

/** Field values are JSON when they parse as JSON, as vLLM reads them. */
function fieldValue(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? '');
  } catch {
    return text;
  }
}

function readsTheStore(config: Record<string, unknown>): boolean {
  if (storeConnectors.has(String(config.kv_connector))) return true;
  const extra = config.kv_connector_extra_config as { connectors?: unknown } | undefined;
  return (
    config.kv_connector === 'MultiConnector' &&
    Array.isArray(extra?.connectors) &&
    extra.connectors.some((c) => storeConnectors.has(String((c as { kv_connector?: unknown })?.kv_connector)))
  );
}

/** The --kv-transfer-config an argv gives vLLM, when it reads the store: its policy and where each is. */
export interface StoreTransferConfig {
  /** The argument that names the connector (the whole object, or its kv_connector field). */
  at: number;
  policy?: { value: string; at: number };
}

/** The store connector configuration vLLM would read from `argv` (entries before `from` skipped). */
export function storeTransferConfig(
  engine: EngineFamily,
  argv: readonly string[],
  from = 0,
): StoreTransferConfig | undefined {
  let whole: { config: Record<string, unknown>; at: number } | undefined;
  const fields: Record<string, unknown> = {};
  const fieldAt: Record<string, number> = {};
  for (let i = from; i < argv.length; i++) {
    const a = kvTransferArg(engine, argv, i);
    if (!a) continue;
    if (a.field === undefined) {
      const config = parseObject(a.value);
      if (config) whole = { config, at: a.at };
    } else if (!a.field.includes('.')) {
      fields[a.field] = fieldValue(a.value);
      fieldAt[a.field] = a.at;
    }
  }
  const byFields = Object.keys(fields).length > 0;
  const config = byFields ? fields : whole?.config;
  if (!config || !readsTheStore(config)) return undefined;
  const at = (name: string) => (byFields ? fieldAt[name]! : whole!.at);
  return {
    at: at('kv_connector'),
    ...(policyKey in config ? { policy: { value: String(config[policyKey]), at: at(policyKey) } } : {}),
  };
}
