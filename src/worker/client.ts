// The UI side of the worker: spawns it once and wraps it with comlink.

import * as Comlink from 'comlink';
import type { EngineApi } from './api.ts';

let engine: Comlink.Remote<EngineApi> | null = null;

export function getEngine(): Comlink.Remote<EngineApi> {
  engine ??= Comlink.wrap<EngineApi>(new Worker(new URL('./engine.worker.ts', import.meta.url), { type: 'module', name: 'marft-engine' }));
  return engine;
}
