// Every admission handler the operator serves, and the configurations that route requests to them.

import type { KubeClient } from '../kube/client.ts';
import type { WebhookServer } from '../kube/webhook-server.ts';
import { deploymentInformers } from '../operator-io/informers.ts';
import type { OperatorContext } from '../operator-io/operator-context.ts';
import { backendAdmission, backendHook } from './backend.ts';
import {
  type HookSpec,
  mutatingConfigurationName,
  renderWebhookConfiguration,
  validatingConfigurationName,
  type WebhookReach,
} from './configuration.ts';
import {
  modelDeploymentAdmission,
  modelDeploymentHook,
  podFreezeAdmission,
  podFreezeHook,
  podInjectionAdmission,
  podInjectionHook,
} from './modeldeployment.ts';
import { podTenantAdmission, podTenantHook } from './pod-tenant.ts';
import { bindingAdmission, bindingHook, poolAdmission, poolHook } from './pool-binding.ts';

export interface Hooks {
  validating: HookSpec[];
  mutating: HookSpec[];
}

/** Every hook the operator serves, as the webhook configurations route to them. */
export const webhookHooks: Hooks = {
  validating: [backendHook, poolHook, bindingHook, modelDeploymentHook, podFreezeHook, podTenantHook],
  mutating: [podInjectionHook],
};

export function registerWebhookHandlers(server: WebhookServer, ctx: OperatorContext): Hooks {
  const informers = deploymentInformers(ctx);
  server.handle(backendHook.path, backendAdmission(ctx.settings));
  server.handle(poolHook.path, poolAdmission(ctx, informers));
  server.handle(bindingHook.path, bindingAdmission(ctx, informers));
  server.handle(modelDeploymentHook.path, modelDeploymentAdmission(ctx, informers));
  server.handle(podInjectionHook.path, podInjectionAdmission(ctx, informers));
  server.handle(podFreezeHook.path, podFreezeAdmission);
  server.handle(podTenantHook.path, podTenantAdmission(ctx, informers));
  return webhookHooks;
}

/** Applies the webhook configurations with the current CA bundle (every replica; same intent). */
export async function applyWebhookConfigurations(
  client: KubeClient,
  hooks: Hooks,
  reach: WebhookReach,
  caBundle: string,
): Promise<void> {
  for (const [kind, name, list] of [
    ['ValidatingWebhookConfiguration', validatingConfigurationName, hooks.validating],
    ['MutatingWebhookConfiguration', mutatingConfigurationName, hooks.mutating],
  ] as const) {
    await client.apply(renderWebhookConfiguration(kind, name, list, reach, caBundle), {
      fieldManager: 'kvpool-webhook',
    });
  }
}
