// `kubectl kvpool status` for people: the status model as text trees. Pure.
import type { PoolPrefix } from '../api/pool-prefix.ts';
import { failoverLine } from './failover-line.ts';
import type { BackendNode, BindingNode, Figure, MdNode, PoolNode, StatusModel } from './status-model.ts';
import { renderTree, type TreeNode } from './tree.ts';

const barWidth = 24;

const cells = (part: bigint, whole: bigint) =>
  whole <= 0n ? 0 : Math.min(barWidth, Number((part * BigInt(barWidth) + whole / 2n) / whole));

/**
 * The Binding's ceiling as a bar: █ what the domain holds, ▒ the rest of its grant, ░ the part of the
 * ceiling the store does not grant. A figure the store did not report is said so, never drawn as 0.
 */
export function quotaBar(ceiling: Figure, effective?: Figure, usage?: Figure): string {
  const whole = BigInt(ceiling.bytes);
  const used = usage ? Math.max(BigInt(usage.bytes) > 0n ? 1 : 0, cells(BigInt(usage.bytes), whole)) : 0;
  const granted = effective ? Math.max(used, cells(BigInt(effective.bytes), whole)) : used;
  const bar = '█'.repeat(used) + '▒'.repeat(granted - used) + '░'.repeat(barWidth - granted);
  const words = [
    `usage ${usage?.display ?? 'not reported'}`,
    `grant ${effective?.display ?? 'not reported'}`,
    `ceiling ${ceiling.display}`,
  ];
  return `[${bar}] ${words.join(' · ')}`;
}

const phaseOf = (phase: string | undefined) => phase ?? '(no status yet)';

/** Prompt tokens served from the pool, as the engines count them; a count not reported is said so. */
export function poolPrefixLine(p: PoolPrefix | undefined): string {
  if (p?.hitTokens === undefined) return 'prompt tokens served from the pool: not reported';
  const looked = p.queriedTokens === undefined ? '' : ` of ${p.queriedTokens} looked up`;
  const ratio = p.hitRatio === undefined ? '' : ` (${(Number(p.hitRatio) * 100).toFixed(1)}%)`;
  return `prompt tokens served from the pool: ${p.hitTokens}${looked}${ratio}`;
}
const problems = (xs: string[]) => xs.map((x) => `✖ ${x}`);
const notes = (xs: string[]) => xs.map((x) => `• ${x}`);

function mdTree(m: MdNode): TreeNode {
  const parts = [`ModelDeployment ${m.namespace}/${m.name}`, phaseOf(m.phase), m.engine];
  if (m.roles) parts.push(m.roles);
  if (m.cache) parts.push(m.cache);
  const served = m.usesPool ? [poolPrefixLine(m.poolPrefix)] : [];
  return { text: parts.join('  '), details: [...served, ...problems(m.problems)] };
}

function bindingTree(b: BindingNode): TreeNode {
  return {
    text: `KVCachePoolBinding ${b.namespace}/${b.name}  ${phaseOf(b.phase)}  domain ${b.domain}`,
    details: [
      quotaBar(b.ceiling, b.effective, b.usage),
      poolPrefixLine(b.poolPrefix),
      ...problems(b.problems),
      ...notes(b.notes),
    ],
    children: b.deployments.map(mdTree),
  };
}

function poolTree(p: PoolNode): TreeNode {
  return {
    text: `KVCachePool ${p.name}  ${phaseOf(p.phase)}  quota ${p.quota.display}  usage ${p.usage?.display ?? 'not reported'}`,
    details: [...problems(p.problems), ...notes(p.notes)],
    children: p.bindings.map(bindingTree),
  };
}

function leaderLine(b: BackendNode): string {
  const l = b.leader;
  if (!b.managed) return `leader: external, at ${b.endpoint ?? 'no published endpoint'}`;
  if (!l) return 'leader: none';
  const who = l.pod ? `Pod ${l.pod}${l.node ? ` on ${l.node}` : ''}` : 'no Pod serves';
  const elected = l.holder ? `elected ${l.holder}` : 'no Lease holder';
  return `leader: ${elected}, ${who}; ${l.replicas} replica${l.replicas === 1 ? '' : 's'}, ${l.ready} ready`;
}

function backendTree(b: BackendNode): TreeNode {
  const capacity = b.capacity
    ? `capacity ${b.capacity.total.display}${b.capacity.used ? ` (${b.capacity.used.display} used)` : ''}`
    : 'capacity not reported';
  const members: TreeNode = {
    text: `members: ${b.members.length} node${b.members.length === 1 ? '' : 's'}`,
    children: b.members.map((m) => ({
      text: [
        m.node,
        m.pod ? `${m.pod} ${m.ready ? 'ready' : 'not ready'}` : 'no member Pod',
        m.segment ? `segment ${m.segment}` : 'no segment listed',
      ].join('  '),
      details: m.fault ? [`✖ ${m.fault}`] : [],
    })),
  };
  return {
    text: `KVCacheBackend ${b.name}  ${phaseOf(b.phase)}  ${capacity}`,
    details: [
      leaderLine(b),
      ...(b.lastFailover ? [failoverLine(b.lastFailover)] : []),
      ...problems(b.problems),
      ...notes(b.notes),
    ],
    children: [...(b.managed ? [members] : []), ...b.pools.map(poolTree)],
  };
}

export function renderStatus(model: StatusModel): string {
  const trees = model.backends.map(backendTree);
  const { pools, bindings } = model.unattached;
  if (pools.length || bindings.length)
    trees.push({
      text: 'Without a backend or pool',
      children: [...pools.map(poolTree), ...bindings.map(bindingTree)],
    });
  if (trees.length === 0) return 'No KVCacheBackend, pool or Binding in this cluster.\n';
  const body = trees.map((t) => renderTree(t).join('\n')).join('\n\n');
  return `${body}\n\nBars: █ usage  ▒ granted  ░ ceiling the store does not grant\n`;
}
