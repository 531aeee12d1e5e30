// The Pod a store container runs in, from the environment the rendered Pod sets (downward API).

export interface PodIdentity {
  name: string | undefined;
  namespace: string | undefined;
  ip: string | undefined;
}

export function podFromEnv(env: NodeJS.ProcessEnv = process.env): PodIdentity {
  return {
    name: env.KUBERNETES_POD_NAME || undefined,
    namespace: env.KUBERNETES_POD_NAMESPACE || undefined,
    ip: env.KUBERNETES_POD_IP || undefined,
  };
}
