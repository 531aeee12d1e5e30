// Every admission handler the operator serves, and the configurations that route requests to them.
import type { OperatorContext } from '../controllers/context.ts';
import { poolInformers } from '../controllers/pool/watches.ts';
import type { KubeClient } from '../kube/client.ts';
import type { WebhookServer } from '../kube/webhook-server.ts';
import { backendAdmission, backendHook } from './backend.ts';
import {
  type HookSpec,
  renderWebhookConfiguration,
  validatingConfigurationName,
  type WebhookReach,
} from './configuration.ts';
import { bindingAdmission, bindingHook, poolAdmission, poolHook } from './pool-binding.ts';

export function registerWebhookHandlers(
  server: WebhookServer,
  ctx: OperatorContext,
): { validating: HookSpec[] } {
  const informers = poolInformers(ctx);
  server.handle(backendHook.path, backendAdmission(ctx.settings));
  server.handle(poolHook.path, poolAdmission(ctx, informers));
  server.handle(bindingHook.path, bindingAdmission(ctx, informers));
  return { validating: [backendHook, poolHook, bindingHook] };
}

/** Applies the webhook configurations with the current CA bundle (every replica; same intent). */
export async function applyWebhookConfigurations(
  client: KubeClient,
  hooks: { validating: HookSpec[] },
  reach: WebhookReach,
  caBundle: string,
): Promise<void> {
  const config = renderWebhookConfiguration(
    'ValidatingWebhookConfiguration',
    validatingConfigurationName,
    hooks.validating,
    reach,
    caBundle,
  );
  await client.apply(config, { fieldManager: 'kvpool-webhook' });
}
