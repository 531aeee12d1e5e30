// Per-group rules for spec.connection.managed.members[i] that the CRD's CEL rules cannot express.
import type { KVCacheBackendSpec, MemberGroup } from '../api/kvcache-backend.ts';
import { memberArgsRefusals, memberEnvRefusals } from './backend-rules-args.ts';
import type { AdmissionFindings } from './findings.ts';
import { imageReferenceRefusal } from './image-reference.ts';

const labelName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A label key: an optional DNS-1123 subdomain prefix (≤253) and `/`, then a name of ≤63 characters. */
function isLabelKey(key: string): boolean {
  const parts = key.split('/');
  if (parts.length > 2) return false;
  const name = parts.pop()!;
  const prefix = parts[0];
  if (prefix !== undefined && (prefix.length > 253 || !dnsSubdomain.test(prefix))) return false;
  return name.length <= 63 && labelName.test(name);
}

/** A label value: empty, or ≤63 characters of the label-name alphabet. */
function isLabelValue(value: string): boolean {
  return value === '' || (value.length <= 63 && labelName.test(value));
}

/** Adds the errors and warnings of one member group, at `spec.connection.managed.members[index]`. */
export function checkMemberGroup(
  spec: KVCacheBackendSpec,
  group: MemberGroup,
  index: number,
  findings: AdmissionFindings,
): void {
  const path = `spec.connection.managed.members[${index}]`;
  for (const [key, value] of Object.entries(group.nodeSelector ?? {})) {
    if (!isLabelKey(key)) {
      findings.errors.push(
        `${path}.nodeSelector: key "${key}" is not a label key (an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit); use the node label's exact key, for example kubernetes.io/os`,
      );
    }
    if (!isLabelValue(value)) {
      findings.errors.push(
        `${path}.nodeSelector["${key}"]: value "${value}" is not a label value (empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit); use the node label's exact value`,
      );
    }
  }
  if (group.image !== undefined) {
    const refusal = imageReferenceRefusal(`${path}.image`, group.image);
    if (refusal) findings.errors.push(refusal);
  }
  findings.errors.push(...memberArgsRefusals(group.extraArgs, `${path}.extraArgs`));
  findings.errors.push(...memberEnvRefusals(group.extraEnv, `${path}.extraEnv`));

  const protocol = group.transport?.protocol ?? spec.transport?.protocol ?? 'Auto';
  if (group.fabricInterfaceCount !== undefined && protocol !== 'RDMA' && protocol !== 'EFA') {
    findings.warnings.push(
      `${path}.fabricInterfaceCount: only RDMA and EFA use fabric interfaces, and this group's protocol is ${protocol}, so the count has no effect; remove it, or set the group's transport.protocol to RDMA or EFA`,
    );
  }
}
