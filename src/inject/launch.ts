// Which program a Pod's container launches, so the injected flags reach the engine's own parser.
// Accepted entry points, transparent launchers and what is refused: docs/on-your-cluster.md.
import { type EngineFamily, engineDisplayNames, engineEntryPoints, isVllmFamily } from './types.ts';

export type LaunchVerdict = { ok: true; program: string } | { ok: false; message: string };

export interface LaunchOptions {
  /** The Pod declared `kvcache.gpustack.ai/launch-args-forwarded: "true"`. */
  argsForwarded: boolean;
  /** The container's field path, e.g. spec.containers[0]. */
  field: string;
}

export const argsForwardedAnnotation = 'kvcache.gpustack.ai/launch-args-forwarded';
/** The program recorded when args are forwarded to the image's own ENTRYPOINT. */
const imageEntrypoint = '<image entrypoint>';

const shells = new Set(['sh', 'bash', 'dash', 'ash', 'zsh', 'ksh']);
const shellOptionsWithValue = new Set(['-o', '-O']);
const wrapperNames = new Set(['entrypoint', 'run']);
const forwardHint = `if it passes appended arguments on to the engine, annotate the Pod ${argsForwardedAnnotation}: "true"; otherwise call the engine's entry point directly`;

type Strip = { rest: string[] } | { refuse: string };

function basename(token: string): string {
  return token.slice(token.lastIndexOf('/') + 1);
}

/** Drops leading options (those in `withValue` take the next token) and an optional `--`. */
function skipOptions(argv: string[], withValue: Set<string>): string[] {
  let i = 0;
  while (i < argv.length && argv[i]!.startsWith('-')) {
    if (argv[i] === '--') return argv.slice(i + 1);
    i += withValue.has(argv[i]!) ? 2 : 1;
  }
  return argv.slice(i);
}

function splitsString(arg: string): boolean {
  return arg.startsWith('--split-string') || /^-[a-zA-Z0-9]*S/.test(arg);
}

/** env without -S: options and NAME=VALUE assignments go, the program stays. */
function stripEnv(argv: string[]): Strip {
  const withValue = new Set(['-u', '--unset', '-C', '--chdir']);
  let i = 0;
  while (i < argv.length) {
    const arg = argv[i]!;
    if (arg === '--') return { rest: argv.slice(i + 1) };
    if (arg.startsWith('-') && splitsString(arg))
      return {
        refuse: 'env -S (--split-string) re-splits its argument, so appended flags may land inside it',
      };
    if (!arg.startsWith('-') && !/^[A-Za-z_][A-Za-z0-9_]*=/.test(arg)) break;
    i += withValue.has(arg) ? 2 : 1;
  }
  return { rest: argv.slice(i) };
}

/** A shell running a script is the script; `sh -c` can never be read. */
function stripShell(argv: string[]): Strip {
  const rest = skipOptions(argv, shellOptionsWithValue);
  const options = argv.slice(0, argv.length - rest.length);
  if (options.some((o) => /^-[a-zA-Z]*c/.test(o)))
    return {
      refuse:
        'sh -c runs a command string the webhook cannot read, and appended flags go to the shell, not the engine',
    };
  return { rest };
}

/** One transparent launcher taken off the front of `argv`, or undefined when none is there. */
function stripLauncher(argv: string[]): Strip | undefined {
  const [head = '', ...tail] = argv;
  const name = basename(head);
  if (name === 'tini' || name === 'tini-static') return { rest: skipOptions(tail, new Set(['-e', '-p'])) };
  if (name === 'dumb-init') return { rest: skipOptions(tail, new Set(['-r', '--rewrite'])) };
  if (name === 'env') return stripEnv(tail);
  if (name === 'exec') return { rest: skipOptions(tail, new Set(['-a'])) };
  if (shells.has(name)) return stripShell(tail);
  return undefined;
}

/** The engine an argv launches directly, by its entry point. */
function engineOf(argv: string[]): 'vllm' | 'sglang' | undefined {
  const [program = '', flag, module] = argv;
  const name = basename(program);
  if (name === 'vllm') return 'vllm';
  if (/^python(3(\.\d+)?)?$/.test(name) && flag === '-m' && module === 'sglang.launch_server')
    return 'sglang';
  return undefined;
}

function refuse(opts: LaunchOptions, why: string): LaunchVerdict {
  return { ok: false, message: `${opts.field}: ${why}` };
}

function judgeProgram(engine: EngineFamily, argv: string[], opts: LaunchOptions): LaunchVerdict {
  const launched = engineOf(argv);
  const wanted = isVllmFamily(engine) ? 'vllm' : 'sglang';
  if (launched === wanted) return { ok: true, program: engineEntryPoints[engine] };
  const name = basename(argv[0]!);
  if (launched)
    return refuse(
      opts,
      `launches ${engineDisplayNames[launched]} (${engineEntryPoints[launched]}) but kvcache.gpustack.ai/engine names ${engineDisplayNames[engine]}; set the annotation to the engine the container runs`,
    );
  if (opts.argsForwarded) return { ok: true, program: argv[0]! };
  const wrapper = name.endsWith('.sh') || wrapperNames.has(name);
  const what = wrapper
    ? `runs the wrapper script ${argv[0]}`
    : `launches ${argv[0]}, which is not an entry point the webhook recognises`;
  return refuse(
    opts,
    `${what} (expected ${engineEntryPoints[engine]}, optionally behind tini --, dumb-init, env or exec); ${forwardHint}`,
  );
}

/** The launch program of a container with `command`/`args`, or why the injection cannot trust it. */
export function recogniseLaunch(
  engine: EngineFamily,
  container: { command?: string[]; args?: string[] },
  opts: LaunchOptions,
): LaunchVerdict {
  const command = container.command ?? [];
  const args = container.args ?? [];
  if (!command.length && !args.length)
    return refuse(
      opts,
      `sets neither command nor args, so the webhook cannot tell what it launches; set command to ${engineEntryPoints[engine]} and its arguments`,
    );
  if (!command.length)
    return opts.argsForwarded
      ? { ok: true, program: imageEntrypoint }
      : refuse(
          opts,
          `sets args without command, so they go to the image's ENTRYPOINT, which the webhook cannot read; set command to ${engineEntryPoints[engine]}, or ${forwardHint}`,
        );
  let argv = [...command, ...args];
  for (let strip = stripLauncher(argv); strip; strip = stripLauncher(argv)) {
    if ('refuse' in strip) return refuse(opts, `${strip.refuse}; call ${engineEntryPoints[engine]} directly`);
    if (!strip.rest.length)
      return refuse(
        opts,
        `runs ${argv[0]} with nothing after it; put ${engineEntryPoints[engine]} and its arguments after the launcher`,
      );
    argv = strip.rest;
  }
  return judgeProgram(engine, argv, opts);
}
