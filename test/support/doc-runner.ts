// Runs a doc's console blocks as a reader would, in a shell: a script once (its first failing command
// fails it), a transcript's command again and again until it prints what the doc shows, since the
// states a doc shows are reached asynchronously.
import { spawn } from 'node:child_process';
import { type ConsoleStep, consoleSteps } from './doc-blocks.ts';
import { outputDifference } from './doc-output.ts';
import { waitFor } from './wait.ts';

export interface Shell {
  cwd: string;
  env: NodeJS.ProcessEnv;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** One bash run; a command still running after `limitMs` is killed with its children (its group). */
function bash(flags: string, text: string, shell: Shell, limitMs: number): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [flags, 'pipefail', '-c', text], {
      cwd: shell.cwd,
      env: shell.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const limit = setTimeout(() => {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
      stderr += `\n(killed after ${limitMs / 1000} s)`;
    }, limitMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(limit);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a script block; rejects with the block and everything it printed when a command fails. */
export async function runScript(script: string, shell: Shell, limitMs = 10 * 60_000): Promise<string> {
  const r = await bash('-euo', script, shell, limitMs);
  const out = r.stdout + r.stderr;
  if (r.code !== 0) throw new Error(`exit ${r.code} running:\n${script}\n--- output ---\n${out}`);
  return out;
}

/**
 * Runs a transcript's command until its output is the doc's, or rejects after `timeoutMs` with the
 * command, the first line that differs and both outputs.
 */
export async function runTranscript(
  step: { command: string; output: string },
  shell: Shell,
  timeoutMs = 5 * 60_000,
): Promise<void> {
  let last: { ran: Ran; difference: string } | undefined;
  try {
    await waitFor(
      async () => {
        const ran = await bash('-o', step.command, shell, 60_000);
        const difference =
          ran.code === 0
            ? outputDifference(step.output, ran.stdout)
            : `exit ${ran.code}: ${ran.stderr.trim()}`;
        last = difference ? { ran, difference } : undefined;
        return difference ? undefined : true;
      },
      { what: `\`${step.command}\` to print the doc's output`, timeoutMs, intervalMs: 2000 },
    );
  } catch (err) {
    if (!last) throw err;
    throw new Error(
      [
        `\`${step.command}\` never printed the doc's output in ${timeoutMs / 1000} s; last run, ${last.difference}`,
        '--- the doc ---',
        step.output,
        '--- printed ---',
        last.ran.stdout.replace(/\n$/, ''),
        ...(last.ran.stderr ? ['--- stderr ---', last.ran.stderr.replace(/\n$/, '')] : []),
      ].join('\n'),
    );
  }
}

/** Runs one console block; the label names it in a failure (the page, its section, its number). */
export async function runConsoleBlock(block: string, shell: Shell, label: string): Promise<void> {
  for (const step of consoleSteps(block) as ConsoleStep[]) {
    try {
      if ('script' in step) await runScript(step.script, shell);
      else await runTranscript(step, shell);
    } catch (err) {
      throw new Error(`${label}:\n${(err as Error).message}`);
    }
  }
}
