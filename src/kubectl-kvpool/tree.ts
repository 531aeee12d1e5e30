// Text trees as `tree` draws them: each node a line, its details under it, its children indented.
export interface TreeNode {
  text: string;
  details?: string[];
  children?: TreeNode[];
}

function lines(node: TreeNode, lead: string, cont: string): string[] {
  const kids = node.children ?? [];
  const out = [`${lead}${node.text}`];
  for (const d of node.details ?? []) out.push(`${cont}${kids.length ? '│  ' : '   '}${d}`);
  kids.forEach((k, i) => {
    const last = i === kids.length - 1;
    out.push(...lines(k, cont + (last ? '└─ ' : '├─ '), cont + (last ? '   ' : '│  ')));
  });
  return out;
}

/** The lines of one tree. Pure. */
export function renderTree(root: TreeNode): string[] {
  return lines(root, '', '').map((l) => l.trimEnd());
}
