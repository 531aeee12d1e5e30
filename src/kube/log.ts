// Structured JSON logs (pino). Every line about an object carries its kind, namespace and name.
import pino from 'pino';

export type Logger = pino.Logger;

export const log: Logger = pino({
  level: process.env.KVPOOL_LOG_LEVEL ?? 'info',
  base: { component: process.env.KVPOOL_COMPONENT ?? 'kvpool' },
  timestamp: pino.stdTimeFunctions.isoTime,
});

export function objectLogger(
  parent: Logger,
  kind: string,
  namespace: string | undefined,
  name: string,
): Logger {
  return parent.child({ kind, ...(namespace ? { namespace } : {}), name });
}
