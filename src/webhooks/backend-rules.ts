// KVCacheBackend admission rules the CRD schema and its CEL rules cannot express. Pure: the
// webhook handler passes the object, the old object on update, and the Settings it needs.

import { storeImageExample } from '../api/setting.ts';
import type { KVCacheBackend } from '../api/types.ts';
import { canonicalJson } from '../kube/canonical-json.ts';
import { nameList } from '../vocabulary/conditions.ts';
import { leaderName, memberDaemonSetName, seedConfigMapName } from '../vocabulary/store-objects.ts';
import { leaderArgsRefusals, leaderEnvRefusals } from './backend-rules-args.ts';
import { checkMemberGroup } from './backend-rules-members.ts';
import { diskTierRefusals, positionRefusal } from './backend-rules-positions.ts';
import type { AdmissionFindings } from './findings.ts';
import { imageReferenceRefusal } from './image-reference.ts';

export interface BackendAdmissionContext {
  /** Value of the kv-cache-backend-image Setting ('' when unset/blank). */
  settingImage: string;
}

const leaderPath = 'spec.connection.managed.leader';

export function validateBackend(
  obj: KVCacheBackend,
  old: KVCacheBackend | undefined,
  ctx: BackendAdmissionContext,
): AdmissionFindings {
  const findings: AdmissionFindings = { errors: [], warnings: [] };
  // A metadata-only edit (the finalizer's removal) is never refused, whatever the stored spec holds.
  if (old && canonicalJson(old.spec) === canonicalJson(obj.spec)) return findings;
  const { errors } = findings;
  const managed = obj.spec.connection?.managed;
  errors.push(...imageRefusals(obj, old, ctx, managed !== undefined));
  if (!managed) return findings;

  const members = managed.members ?? [];
  const nameRefusal = renderedNameRefusal(obj.metadata.name ?? '', members.length);
  if (nameRefusal) errors.push(nameRefusal);
  errors.push(...leaderArgsRefusals(managed.leader?.extraArgs, `${leaderPath}.extraArgs`));
  errors.push(...leaderEnvRefusals(managed.leader?.extraEnv, `${leaderPath}.extraEnv`));
  members.forEach((group, i) => {
    checkMemberGroup(obj.spec, group, i, findings);
  });

  const before = old?.spec.connection?.managed;
  if (old && before) {
    const tenancyRefusal = multiTenancyRefusal(
      old,
      before.leader?.multiTenancy,
      managed.leader?.multiTenancy,
    );
    if (tenancyRefusal) errors.push(tenancyRefusal);
    const moved = positionRefusal(before.members ?? [], members);
    if (moved) errors.push(moved);
    errors.push(...diskTierRefusals(before.members ?? [], members));
  }
  return findings;
}

function imageRefusals(
  obj: KVCacheBackend,
  old: KVCacheBackend | undefined,
  ctx: BackendAdmissionContext,
  managed: boolean,
): string[] {
  const image = obj.spec.image ?? '';
  if (image !== '') {
    const refusal = imageReferenceRefusal('spec.image', image);
    return refusal ? [refusal] : [];
  }
  // The Setting is consulted only when the image is being chosen: on create, or when spec.image moves.
  const imageMoved = old === undefined || (old.spec.image ?? '') !== image;
  if (!managed || !imageMoved || ctx.settingImage !== '') return [];
  return [
    `spec.image: no image is set and the Setting kv-cache-backend-image is empty, so the store has no image to run; set spec.image to a kvpool-store image (for example ${storeImageExample}), or set the kv-cache-backend-image Setting`,
  ];
}

const dns1035Label = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** The error for a backend name that would make a rendered object name invalid, or undefined. */
function renderedNameRefusal(name: string, groups: number): string | undefined {
  if (name === '') return undefined;
  const named = { metadata: { name } };
  const rendered = [
    leaderName(named),
    ...Array.from({ length: groups }, (_, i) => memberDaemonSetName(named, i)),
    seedConfigMapName(name),
  ];
  const invalid = rendered.filter((n) => n.length > 63 || !dns1035Label.test(n));
  if (invalid.length === 0) return undefined;
  const longest = Math.max(...rendered.map((n) => n.length - name.length));
  const shown = nameList(invalid, 3);
  return `metadata.name: "${name}" yields object names (${shown}) that are not DNS-1035 labels (at most 63 lowercase letters, digits and '-', starting with a letter and ending with a letter or digit); choose a name of at most ${63 - longest} characters that starts with a letter and has no dots`;
}

/** multiTenancy may not go from on (the default) to off while anything claims the backend. */
function multiTenancyRefusal(
  old: KVCacheBackend,
  before: boolean | undefined,
  after: boolean | undefined,
): string | undefined {
  if (!(before ?? true) || (after ?? true)) return undefined;
  const claimants = old.status?.usedBy ?? [];
  if (claimants.length === 0) return undefined;
  const named = nameList(claimants.map((c) => `${c.kind}/${c.name}`));
  return `${leaderPath}.multiTenancy: multi-tenancy cannot be turned off while the backend is in use by ${named}, whose quotas and domains need it; delete those users or move them to another backend first, or keep multiTenancy true`;
}
