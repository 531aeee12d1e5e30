// `status.poolPrefix` of ModelDeployments and Bindings: prompt tokens the engines loaded from the pool
// instead of computing them, as the engines themselves count them
// (docs/decisions/0027-engine-observation-contract.md).
import { hitRatePattern } from './kvcache-pool.ts';
import { type Static, Type } from './schema.ts';

const tokens = (description: string) =>
  Type.Optional(Type.Integer({ format: 'int64', minimum: 0, description }));

/** The schema of a status's poolPrefix; `scope` says whose engines are counted, `note` how they add up. */
export function PoolPrefixStatus(scope: string, note = '') {
  return Type.Optional(
    Type.Object(
      {
        hitTokens: tokens(
          `Prompt tokens ${scope} loaded from the pool instead of computing them: vLLM's vllm:external_prefix_cache_hits_total, SGLang's sglang:prefetched_tokens_total. The engines' counters start again when a replica restarts, so this can go down. Absent when not reported.`,
        ),
        queriedTokens: tokens(
          `Prompt tokens ${scope} looked up in the pool (vLLM's vllm:external_prefix_cache_queries_total; SGLang does not count them). Absent when not reported.`,
        ),
        hitRatio: Type.Optional(
          Type.String({
            pattern: hitRatePattern,
            maxLength: 6,
            description:
              'The share of queriedTokens served from the pool, 0 to 1 with up to four decimals: the hits of the engines that count their lookups (vLLM) over queriedTokens. Absent when queriedTokens is absent or 0.',
          }),
        ),
      },
      {
        description: `Prompt tokens served from the pool, as ${scope} count them (never estimated by the operator).${note} Absent when none reported.`,
      },
    ),
  );
}

export type PoolPrefix = NonNullable<Static<ReturnType<typeof PoolPrefixStatus>>>;
