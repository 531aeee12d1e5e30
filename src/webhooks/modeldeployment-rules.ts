// ModelDeployment admission rules the schema cannot judge: a role's shape, and the engine arguments the
// operator renders itself. Pure: the handler passes the InstanceTypes and the protocols of the pool a
// new Binding uses.
import type { ModelDeploymentRole } from '../api/model-deployment.ts';
import type { InstanceType, ModelDeployment } from '../api/types.ts';
import { flagValue } from '../inject/argv.ts';
import { findOwnedKeyRefusals } from '../inject/owned-keys.ts';
import { type EngineFamily, loadFailurePolicyAnnotation } from '../inject/types.ts';
import { canonicalJson } from '../kube/canonical-json.ts';
import { baselineRefusals } from '../vocabulary/engine-baseline.ts';
import { engineFamily, isTakeOver } from '../vocabulary/engine-roles.ts';
import { runnerImageRefusal } from '../vocabulary/runner-image.ts';
import type { AdmissionFindings } from './findings.ts';
import { policyAnnotationRefusal, takeOverPolicyFindings } from './load-failure-policy-rules.ts';
import { ascendMismatch } from './pod-injection-target.ts';
import { type BoundTenant, takeOverTenantRefusals } from './tenant-rules.ts';

export interface ModelDeploymentAdmissionContext {
  dtypeOwned: boolean;
  instanceTypes: Map<string, InstanceType>;
  /** Effective store protocols of the pool the deployment's Binding resolves to (on create). */
  poolProtocols?: string[];
  /** The block size and dtype of the domain of the Binding the deployment names, when it exists. */
  domainBlockSize?: number;
  domainDtype?: string;
  /** The Binding the deployment names and its domain (the store tenant), when it exists. */
  tenant?: BoundTenant;
}

/** vLLM's CPU attention cuts the KV cache in blocks of a multiple of this many tokens. */
const cpuBlockMultiple = 32;

const reservedEnv = ['GPUSTACK_REPLICA_LEADER_ADDRESS', 'GPUSTACK_REPLICA_SIZE', 'GPUSTACK_MEMBER_INDEX'];

function familyOf(md: ModelDeployment, type: InstanceType | undefined): EngineFamily {
  if (type) return engineFamily(md, type);
  return md.spec.engine.name === 'SGLang' ? 'sglang' : 'vllm';
}

export function validateModelDeployment(
  md: ModelDeployment,
  old: ModelDeployment | undefined,
  ctx: ModelDeploymentAdmissionContext,
): AdmissionFindings {
  const findings: AdmissionFindings = { errors: [], warnings: [] };
  // A metadata-only edit (the finalizer's removal) is never refused, whatever the stored spec holds;
  // the one annotation the operator renders from is judged whenever it changes.
  if (old && canonicalJson(old.spec) === canonicalJson(md.spec) && policyOf(old) === policyOf(md))
    return findings;
  for (let i = 0; i < md.spec.roles.length; i++) checkRole(md, i, ctx, findings);
  const firstType = ctx.instanceTypes.get(md.spec.roles[0]?.instanceType ?? '');
  const policyRefusal = policyAnnotationRefusal(
    md.metadata.annotations,
    familyOf(md, firstType),
    'the operator',
  );
  if (policyRefusal) findings.errors.push(policyRefusal);
  const protocol = ctx.poolProtocols?.length === 1 ? ctx.poolProtocols[0]! : undefined;
  const ascend =
    !old && md.spec.kvCache && protocol ? ascendMismatch(familyOf(md, firstType), protocol) : undefined;
  if (ascend) findings.errors.push(`spec.kvCache.poolRef: ${ascend}`);
  if (!old && md.spec.kvCache && (ctx.poolProtocols?.length ?? 0) >= 2) {
    findings.errors.push(
      `spec.kvCache.poolRef: KVCachePoolBinding ${md.spec.kvCache.poolRef.name} is served by member groups on several transports (${ctx.poolProtocols!.join(', ')}), and ${md.spec.engine.name} cannot pick one; use a Binding on a pool whose backend uses one transport`,
    );
  }
  return findings;
}

const policyOf = (md: ModelDeployment) => md.metadata.annotations?.[loadFailurePolicyAnnotation];

function checkRole(
  md: ModelDeployment,
  i: number,
  ctx: ModelDeploymentAdmissionContext,
  f: AdmissionFindings,
): void {
  const role = md.spec.roles[i]!;
  const field = `spec.roles[${i}]`;
  const type = ctx.instanceTypes.get(role.instanceType);
  checkRoleShape(md, role, field, type, f);
  const engine = familyOf(md, type);
  const blockSize = ctx.domainBlockSize;
  // Only the CPU runner is known to be vLLM's CPU build; a named image is the user's to know.
  const cpuRunner = type && !type.spec.acceleratable && !role.image && !md.spec.engine.image;
  if (cpuRunner && engine === 'vllm' && md.spec.kvCache && blockSize !== undefined) {
    if (blockSize % cpuBlockMultiple !== 0)
      f.errors.push(
        `${field}.instanceType: InstanceType ${type.metadata.name} has no accelerator, so the role runs the CPU runner, and vLLM's CPU attention needs a block size that is a multiple of ${cpuBlockMultiple}, but KVCachePoolBinding ${md.spec.kvCache.poolRef.name}'s domain cuts blocks of ${blockSize} tokens (the engine would exit at start-up); reference a Binding whose spec.domain.blockSize is a multiple of ${cpuBlockMultiple} (for example 64), or use an InstanceType with an accelerator`,
      );
  }
  if (isTakeOver(role)) {
    const ref = md.spec.kvCache?.poolRef.name;
    const kvCache = ref ? { binding: ref, ...(ctx.tenant ? { tenant: ctx.tenant } : {}) } : undefined;
    f.errors.push(...takeOverTenantRefusals(role, field, kvCache));
    const policy = takeOverPolicyFindings(engine, role.command!, field, md.metadata.annotations);
    f.errors.push(...policy.errors);
    f.warnings.push(...policy.warnings);
    return;
  }
  checkManagedArgs(md, i, engine, ctx, f);
}

/** What any role must be: one Pod per replica, an image to run, no field the baseline level forbids. */
function checkRoleShape(
  md: ModelDeployment,
  role: ModelDeploymentRole,
  field: string,
  type: InstanceType | undefined,
  f: AdmissionFindings,
): void {
  if ((role.size ?? 1) > 1) {
    f.errors.push(
      `${field}.size: ${role.size} Pods per replica is not supported by this operator; use size 1 and scale with replicas`,
    );
  }
  if (!type) {
    f.warnings.push(
      `${field}.instanceType: InstanceType ${role.instanceType} does not exist (yet); no replica runs until it does (see kubectl get instancetype)`,
    );
  }
  if (!role.image && !md.spec.engine.image && !md.spec.engine.version) {
    f.errors.push(
      `${field}: no image to run: set ${field}.image, spec.engine.image, or spec.engine.version (for example 0.29.0)`,
    );
  }
  const untaggable = !role.image && !md.spec.engine.image && type ? runnerImageRefusal(type) : undefined;
  if (untaggable)
    f.errors.push(
      `${field}.image: ${untaggable}, so no default image can be formed; set ${field}.image or spec.engine.image`,
    );
  f.errors.push(...baselineRefusals(role, field));
  (role.env ?? []).forEach((e, j) => {
    if (reservedEnv.includes(e.name))
      f.errors.push(`${field}.env[${j}]: ${e.name} is reserved for the operator; remove it`);
  });
}

/** A managed role's arguments: none the operator renders, and none that contradicts what it renders. */
function checkManagedArgs(
  md: ModelDeployment,
  i: number,
  engine: EngineFamily,
  ctx: ModelDeploymentAdmissionContext,
  f: AdmissionFindings,
): void {
  const role = md.spec.roles[i]!;
  const field = `spec.roles[${i}]`;
  const args = role.extraArgs ?? [];
  f.errors.push(
    ...findOwnedKeyRefusals(engine, args, role.env ?? [], {
      kvCache: Boolean(md.spec.kvCache),
      dtypeOwned: ctx.dtypeOwned,
      field,
    }),
  );
  const modelDtype = flagValue(engine, args, '--dtype');
  if (
    md.spec.kvCache &&
    ctx.dtypeOwned &&
    ctx.domainDtype === 'float32' &&
    modelDtype &&
    modelDtype !== 'float32'
  ) {
    f.errors.push(
      `${field}.extraArgs: --dtype ${modelDtype} would make the engine's KV cache ${modelDtype}, but KVCachePoolBinding ${md.spec.kvCache.poolRef.name}'s domain is float32, which the operator renders as --dtype float32 --kv-cache-dtype auto; remove --dtype, or reference a Binding whose spec.domain.dtype is the one you want`,
    );
  }
  const served = flagValue(engine, args, '--served-model-name');
  if (served !== undefined && served !== md.spec.model.name) {
    f.errors.push(
      `${field}.extraArgs: --served-model-name ${served} must equal spec.model.name (${md.spec.model.name}); remove it, the operator renders it`,
    );
  }
  f.errors.push(...reservedPortRefusals(md, i, engine));
  const port = flagValue(engine, args, '--port');
  const declared = role.ports?.[0]?.port;
  if (port !== undefined && declared !== undefined && Number(port) !== declared) {
    f.errors.push(
      `${field}.extraArgs: --port ${port} differs from ${field}.ports[0].port (${declared}); set one port in ports and drop --port`,
    );
  }
}

// Ports the engine's own Pod already uses for the cache's traffic beside what the operator renders.
const kvEventPorts = [5557, 5558];
const bootstrapPort = 8998;

/** The ports a managed role would serve on that its engine needs for the cache's own traffic. */
function reservedPortRefusals(md: ModelDeployment, i: number, engine: EngineFamily): string[] {
  const role = md.spec.roles[i]!;
  const field = `spec.roles[${i}]`;
  const kinds = new Set(md.spec.roles.map((r) => r.kind ?? 'Server'));
  const pair = kinds.has('Prefill') && kinds.has('Decode');
  const reserved = new Map<number, string>();
  if (md.spec.router?.name === 'llm-d-router' && engine !== 'sglang') {
    for (const p of kvEventPorts)
      reserved.set(p, 'the vLLM KV event publisher under llm-d-router (tcp://*:5557, replay tcp://*:5558)');
  }
  if (pair && role.kind === 'Prefill' && (md.spec.router || md.spec.kvCache))
    reserved.set(bootstrapPort, 'the prefiller’s KV bootstrap port in a Prefill/Decode pair');
  const used: [string, number][] = (role.ports ?? []).map((p, j) => [`${field}.ports[${j}].port`, p.port]);
  const flag = flagValue(engine, role.extraArgs ?? [], '--port');
  if (flag !== undefined) used.push([`${field}.extraArgs`, Number(flag)]);
  return used.flatMap(([at, port]) => {
    const why = reserved.get(port);
    return why ? [`${at}: port ${port} is reserved for ${why}; serve on another port`] : [];
  });
}
