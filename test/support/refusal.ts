// A write the apiserver (its schema or a webhook) must refuse.
import assert from 'node:assert/strict';
import { ApiError } from '../../src/kube/errors.ts';

/** The ApiError `attempt` fails with; fails the test if it was admitted or the message lacks one of `says`. */
export async function refusalOf(attempt: Promise<unknown>, ...says: string[]): Promise<ApiError> {
  const err = await attempt.then(
    () => assert.fail('admitted'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApiError, String(err));
  for (const s of says) assert.ok(err.message.includes(s), `message lacks "${s}": ${err.message}`);
  return err;
}
