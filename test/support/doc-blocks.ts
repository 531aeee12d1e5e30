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
