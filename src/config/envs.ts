// What a front-end needs from the environments to build a run config: the registered environments (for
// the picker), coop-arith's default precedence share and coop-plan's trap share (for their options forms) and the dataset and code-task
// parsers (to check an uploaded file before it goes into env.options). The UI imports these from here, not from
// src/envs, so the config stays its only window on the layers below the worker.

export { DEFAULT_PRECEDENCE } from '../envs/coop.ts';
export { DEFAULT_TRAP } from '../envs/coop-plan.ts';
export { parseCodeTasks } from '../envs/code.ts';
export { parseDataset } from '../envs/dataset.ts';
export { listEnvs } from '../envs/registry.ts';
