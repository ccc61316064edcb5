// The environments layer's public surface: the Env contract, the registry, answer checking and the
// built-in environments.
export * from './types.ts';
export * from './errors.ts';
export * from './answer.ts';
export * from './rng.ts';
export * from './mathEnv.ts';
export * from './arithmetic.ts';
export * from './coop.ts';
export * from './dataset.ts';
export * from './registry.ts';
