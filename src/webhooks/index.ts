// Every admission handler the operator serves, and the configurations that route requests to them.
import type { OperatorContext } from '../controllers/context.ts';
import type { KubeClient } from '../kube/client.ts';
import type { WebhookServer } from '../kube/webhook-server.ts';
import { backendAdmission, backendHook } from './backend.ts';
import {
  type HookSpec,
  renderWebhookConfiguration,
  validatingConfigurationName,
  type WebhookReach,
} from './configuration.ts';

export function registerWebhookHandlers(
  server: WebhookServer,
  ctx: OperatorContext,
): { validating: HookSpec[] } {
  server.handle(backendHook.path, backendAdmission(ctx.settings));
  return { validating: [backendHook] };
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
