// The objects tests build, one module a kind; import them from here.
export * from './admission-context.ts';
export * from './api.ts';
export * from './backend.ts';
export * from './backend-view.ts';
export * from './binding.ts';
export * from './conditions.ts';
export * from './instance-type.ts';
export * from './master-report.ts';
export * from './model-deployment.ts';
export * from './node.ts';
export * from './node-plan.ts';
export * from './pod.ts';
export * from './pool.ts';
