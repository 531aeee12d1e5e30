// How an engine reads its argv: the long flag an argument names, in every spelling the engine accepts.
import { type EngineFamily, isVllmFamily } from './types.ts';

/** The long flag an argument names as the engine reads it: `--a_b.c=d` is `--a-b` on vLLM. */
export function flagKey(engine: EngineFamily, arg: string): string | undefined {
  if (!arg.startsWith('--') || arg === '--') return undefined;
  const key = arg.split('=', 1)[0]!;
  if (!isVllmFamily(engine)) return key;
  // vLLM reads `--kv-transfer-config.kv_role=x` as a field of --kv-transfer-config and takes `_` for `-`.
  const head = key.split('.', 1)[0]!;
  return `--${head.slice(2).replaceAll('_', '-')}`;
}

/** Whether `args` set `flag` in any spelling the engine reads as it. */
export function hasFlag(engine: EngineFamily, args: readonly string[], flag: string): boolean {
  return args.some((arg) => flagKey(engine, arg) === flag);
}

/** The value `args` give `flag` (`--flag value` or `--flag=value`, in any spelling the engine reads), if any. */
export function flagValue(engine: EngineFamily, args: readonly string[], flag: string): string | undefined {
  const i = args.findIndex((arg) => flagKey(engine, arg) === flag);
  if (i < 0) return undefined;
  const arg = args[i]!;
  return arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : args[i + 1];
}
