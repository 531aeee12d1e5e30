// The disk tier's directory, members[].localDisks[].path: spelled one way only, and never a directory
// the node itself lives on, since cleanAfterDelete empties it. The CEL rules and their TypeScript twin
// (which the tier cleanup checks again, for paths stored before these rules) come from the same lists.
import { posix } from 'node:path';
import type { CelRule } from './schema.ts';

/** Directories that may not hold the tier themselves (a directory of its own inside them may). */
export const systemDirectories = [
  '/',
  '/home',
  '/media',
  '/mnt',
  '/opt',
  '/root',
  '/srv',
  '/tmp',
  '/var',
  '/var/cache',
  '/var/lib',
  '/var/log',
  '/var/spool',
  '/var/tmp',
] as const;

/** Trees the tier may not be, or sit inside: the system itself, pseudo-filesystems, runtime state, node agents. */
export const systemTrees = [
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/proc',
  '/run',
  '/sbin',
  '/sys',
  '/usr',
  '/var/lib/containerd',
  '/var/lib/docker',
  '/var/lib/etcd',
  '/var/lib/kubelet',
  '/var/run',
] as const;

/** The trees as one pattern, which RE2 (CEL) and JavaScript read alike. */
const treesPattern = `^(${systemTrees.join('|')})(/|$)`;

const example = 'for example /var/lib/kvcache';

/** The path with empty and `.` components and a trailing / dropped (`..` is refused on its own). */
export function canonicalTierPath(path: string): string {
  const normal = posix.normalize(`/${path}`);
  return normal.length > 1 && normal.endsWith('/') ? normal.slice(0, -1) : normal;
}

const stateOfTheNode = 'the system, runtime or agent state of the node';

/** Why a path cannot hold the tier, or undefined; judged on its canonical spelling. */
export function tierPathProblem(path: string): string | undefined {
  const canonical = canonicalTierPath(path);
  if ((systemDirectories as readonly string[]).includes(canonical))
    return `localDisks[].path must not be a system directory (${canonical}): cleanAfterDelete would empty it; use a directory of its own, ${example}`;
  const tree = new RegExp(treesPattern).exec(canonical)?.[1];
  if (tree)
    return `localDisks[].path must not be or sit inside ${tree} (${stateOfTheNode}); use a directory of its own, ${example}`;
  return undefined;
}

/** CEL naming the tree a refused path is in, as tierPathProblem does: the first of systemTrees it matches. */
function treeExpression(): string {
  return systemTrees.reduceRight(
    (rest, tree) => `(self.matches('^${tree}(/|$)') ? '${tree}' : ${rest})`,
    "'a system tree'",
  );
}

/** The CEL rules of the path's spelling and place; the messages say what tierPathProblem says. */
export function tierPathRules(): CelRule[] {
  // Bounded, since CEL has no loop within its cost budget: enough for any spelling a person types.
  const spelledOut = `(self + '/')${".replace('/./', '/')".repeat(2)}${".replace('//', '/')".repeat(3)}`;
  // The place is judged as written (the spelling rule refuses the rest), a trailing / forgiven.
  const unslashed = "(self.endsWith('/') ? self.substring(0, self.size() - 1) : self)";
  const directories = systemDirectories.filter((d) => d !== '/');
  const spelling =
    'localDisks[].path must be spelled one way only, without //, a . component or a trailing /; write it as';
  const own = `use a directory of its own, ${example}`;
  return [
    {
      rule: "self == '/' || (!self.contains('//') && !self.matches('(^|/)\\\\.(/|$)') && !self.endsWith('/'))",
      message: `${spelling} the plain directory, ${example}`,
      messageExpression: `'${spelling} ' + ${spelledOut}.substring(0, ${spelledOut}.size() - 1)`,
    },
    {
      rule: `!(${unslashed} in [${directories.map((d) => `'${d}'`).join(', ')}])`,
      message: `localDisks[].path must not be a system directory (${directories.join(', ')}): cleanAfterDelete would empty it; ${own}`,
      messageExpression: `'localDisks[].path must not be a system directory (' + ${unslashed} + '): cleanAfterDelete would empty it; ${own}'`,
    },
    {
      rule: `!self.matches('${treesPattern}')`,
      message: `localDisks[].path must not be or sit inside ${systemTrees.join(', ')} (${stateOfTheNode}); ${own}`,
      messageExpression: `'localDisks[].path must not be or sit inside ' + ${treeExpression()} + ' (${stateOfTheNode}); ${own}'`,
    },
  ];
}
