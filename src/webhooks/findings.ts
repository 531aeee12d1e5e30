// What the admission rules find, and the verdict it makes: every error in one refusal, warnings always.
import { type AdmissionVerdict, allow, deny } from '../kube/webhook-server.ts';

export interface AdmissionFindings {
  errors: string[];
  warnings: string[];
}

export function verdictOf({ errors, warnings }: AdmissionFindings): AdmissionVerdict {
  return errors.length ? { ...deny(errors.join('; ')), warnings } : allow(warnings);
}
