// Admission of what a failed or stalled load from the store does (docs/decisions/0028-degrade-never-fail.md):
// vLLM is given recompute; `fail` only on purpose, by the annotation. Shared by ModelDeployments and
// injected Pods. Pure.
import { storeTransferConfig } from '../inject/load-failure-policy.ts';
import {
  type EngineFamily,
  isVllmFamily,
  loadFailurePolicies,
  loadFailurePolicyAnnotation,
  loadFailurePolicyOf,
} from '../inject/types.ts';
import type { AdmissionFindings } from './findings.ts';

const at = `metadata.annotations[${loadFailurePolicyAnnotation}]`;

/** Why the annotation cannot stand on `engine`, if it cannot; `writer` says who writes recompute. */
export function policyAnnotationRefusal(
  annotations: Record<string, string> | undefined,
  engine: EngineFamily,
  writer: 'the operator' | 'the injection',
): string | undefined {
  const value = annotations?.[loadFailurePolicyAnnotation];
  if (value === undefined) return undefined;
  if (!isVllmFamily(engine))
    return `${at} applies to vLLM only (SGLang computes what a slow or failed prefetch from the store does not bring, and has no failing policy); remove it`;
  if (!(loadFailurePolicies as readonly string[]).includes(value))
    return `${at}: "${value}" is not a policy; set "fail" to fail a request whose load from the store fails or stalls, or remove it (${writer} writes recompute)`;
  return undefined;
}

/**
 * A take-over role writes its own --kv-transfer-config: `fail` there is refused unless the deployment's
 * annotation says it is on purpose, and a store connector left on vLLM's default (fail) is warned about.
 */
export function takeOverPolicyFindings(
  engine: EngineFamily,
  command: readonly string[],
  field: string,
  annotations: Record<string, string> | undefined,
): AdmissionFindings {
  const findings: AdmissionFindings = { errors: [], warnings: [] };
  const config = storeTransferConfig(engine, command, 1);
  if (!config || loadFailurePolicyOf(annotations) === 'fail') return findings;
  if (!config.policy) {
    findings.warnings.push(
      `${field}.command[${config.at}]: --kv-transfer-config names a connector but no kv_load_failure_policy, so vLLM fails the request when a load from the store fails or stalls (its default is fail); add "kv_load_failure_policy":"recompute"`,
    );
  } else if (config.policy.value === 'fail') {
    findings.errors.push(
      `${field}.command[${config.policy.at}]: kv_load_failure_policy fail makes vLLM answer the request with HTTP 500 when its load from the store fails or stalls (a busy member, an object whose lease ran out); set it to recompute, or annotate the ModelDeployment ${loadFailurePolicyAnnotation}: "fail" if failing is intended`,
    );
  }
  return findings;
}
