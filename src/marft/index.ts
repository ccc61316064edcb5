// The algorithm layer's CPU-side public surface: graph and presets, prompts, credit, advantages, losses,
// schedules and the run config. (The rollout, buffer, trainer and checkpoint modules join it later.)
export * from './errors.ts';
export * from './graph.ts';
export * from './presets.ts';
export * from './prompt.ts';
export * from './sequence.ts';
export * from './credit.ts';
export * from './advantages.ts';
export * from './losses.ts';
export * from './schedule.ts';
export * from './schema.ts';
export * from './config.ts';
