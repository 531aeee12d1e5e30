// The fenced code blocks of a Markdown page, for tests that run a doc's commands as written.

/** The bodies of the fenced blocks (```) whose info string is `lang`, in the order they appear. */
export function fencedBlocks(markdown: string, lang: string): string[] {
  const blocks: string[] = [];
  let open: { lang: string; lines: string[] } | undefined;
  for (const line of markdown.split('\n')) {
    const fence = /^```\s*(\S*)/.exec(line);
    if (!open) {
      if (fence) open = { lang: fence[1] ?? '', lines: [] };
    } else if (/^```\s*$/.test(line)) {
      if (open.lang === lang) blocks.push(open.lines.join('\n'));
      open = undefined;
    } else open.lines.push(line);
  }
  if (open) throw new Error(`a fenced block (\`\`\`${open.lang}) is never closed`);
  return blocks;
}

/** A page's `## ` sections, in order: each heading (without `## `) and the text up to the next one. */
export function sections(markdown: string): { heading: string; body: string }[] {
  const found: { heading: string; body: string }[] = [];
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (/^```/.test(line)) inFence = !inFence;
    if (!inFence && line.startsWith('## ')) found.push({ heading: line.slice(3).trim(), body: '' });
    else if (found.length) found.at(-1)!.body += `${line}\n`;
  }
  return found;
}

/** What a console block asks: commands to run as a script, or one command and what it prints. */
export type ConsoleStep = { script: string } | { command: string; output: string };

/**
 * A console block as its reader takes it. A block whose first line starts with `$ ` is a transcript:
 * each `$ command` (continued on the next line after a trailing `\`) is followed by the output it
 * prints. Any other block is a script, run as a whole. A watch (`-w`) never ends, so a transcript
 * refuses one: the command is re-run until it prints the output instead.
 */
export function consoleSteps(block: string): ConsoleStep[] {
  const lines = block.replace(/\n+$/, '').split('\n');
  if (!lines[0]?.startsWith('$ ')) {
    const prompt = lines.find((l) => l.startsWith('$ '));
    if (prompt)
      throw new Error(`a console block mixes commands with a transcript (\`${prompt}\`): split it in two`);
    return [{ script: block }];
  }
  const steps: { command: string; output: string }[] = [];
  for (let i = 0; i < lines.length; ) {
    let command = lines[i]!.slice(2);
    while (command.endsWith('\\') && i + 1 < lines.length) command = `${command}\n${lines[++i]}`;
    if (/(^|\s)(-w|--watch)(\s|=|$)/.test(command))
      throw new Error(`\`${command}\` watches, which never ends: write it without -w (the test re-runs it)`);
    const output: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith('$ '); i++) output.push(lines[i]!);
    steps.push({ command, output: output.join('\n') });
  }
  return steps;
}
