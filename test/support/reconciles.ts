// Evidence that the operator ran: the reconcile counter its /metrics serves. A "never happens" check
// waits until a controller finished a counted number of passes after the change, then asserts; with
// the operator stopped the wait times out, where a fixed sleep would have passed.
import { reconcileTotal } from '../../src/kube/metrics.ts';
import { waitFor } from './wait.ts';

/** Reconciles `controller` has finished in this process, whatever their result. */
export async function reconcilesOf(controller: string): Promise<number> {
  const { values } = await reconcileTotal.get();
  return values.filter((v) => v.labels.controller === controller).reduce((n, v) => n + v.value, 0);
}

/** Resolves once `controller` has finished `count` more reconciles than when called. */
export async function afterReconciles(
  controller: string,
  count: number,
  timeoutMs = 60_000,
): Promise<number> {
  const from = await reconcilesOf(controller);
  return waitFor(() => reconcilesOf(controller), {
    what: `${count} more ${controller} reconciles than the ${from} before`,
    until: (n) => n >= from + count,
    timeoutMs,
  });
}
