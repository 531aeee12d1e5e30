// SIGTERM (the kubelet) and SIGINT (a terminal) both mean: stop gracefully.

/** Resolves with the first SIGTERM or SIGINT; later ones are swallowed while the shutdown runs. */
export function shutdownRequested(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => resolve(sig));
  });
}
