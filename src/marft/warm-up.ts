// The kernel warm-up: one iteration of a run config on scratch adapters, thrown away, so that the pipelines a
// run's first iteration needs are made while the user is still looking at the builder. A fresh browser has
// no kernel cache to prepare from, and which kernels (and which variants, picked by shape) an iteration
// dispatches depends on the model, the team and the rollout's sizes, so the one sure list is an iteration
// of that config. Its pipelines stay made for the page's runs and go to the kernel cache for the next visit.
// It stops within a decode step when something needs the model (interrupt), and leaves nothing behind:
// the scratch state is released either way, and the model's weights are never written.

import type { RunConfig } from '../config/run-config.ts';
import { isModuleEnv } from '../envs/registry.ts';
import type { RunSession } from './run-loop.ts';
import { createTrainState, releaseTrainState } from './state.ts';
import { Trainer } from './trainer.ts';

export interface WarmUpResult {
  /** Pipelines the warm-up made (those already made before it are not counted). */
  made: number;
  seconds: number;
  /** The warm-up was stopped before its iteration ended (its pipelines so far stay made). */
  stopped: boolean;
}

export interface WarmUpOptions {
  /** Called between decode steps, scoring chunks and minibatches: a throw stops the warm-up there. */
  interrupt: () => void;
  /** Pipelines made so far and asked for (the lab's "preparing kernels n/N"). */
  onMade?: (made: number, asked: number) => void;
  /** The trainer's maxTokens, as the run will use it (forward sizes pick kernel variants). */
  maxTokens?: number;
}

/** Why `config` is not warmed up ahead (null: it can be): a user's module would run its code for nothing. */
export function warmUpRefusal(config: RunConfig): string | null {
  return isModuleEnv(config.env) ? "an environment module's code runs only for a real run" : null;
}

/** Runs one thrown-away iteration of `config` on `m` (see above); its pipelines stay made on m.gpu. */
export async function warmUpKernels(m: RunSession, config: RunConfig, o: WarmUpOptions): Promise<WarmUpResult> {
  const why = warmUpRefusal(config);
  if (why) throw new Error(`warmUpKernels: ${why}`);
  const { gpu } = m;
  const t0 = performance.now();
  const before = gpu.pipelines.size;
  const onMade = gpu.pipelines.onMade;
  gpu.pipelines.onMade = o.onMade ?? null;
  const state = createTrainState(gpu, m.model, config);
  let stopped = false;
  try {
    const trainer = new Trainer({
      gpu,
      envs: m.envs,
      decoder: m.decoder,
      tokenizer: m.tokenizer,
      state,
      maxTokens: o.maxTokens,
      interrupt: () => {
        try {
          o.interrupt();
        } catch (e) {
          stopped = true;
          throw e;
        }
      },
    });
    await trainer.iteration().catch((e: unknown) => {
      if (!stopped) throw e;
    });
    await gpu.pipelines.settled();
  } finally {
    releaseTrainState(gpu, state);
    gpu.pipelines.onMade = onMade;
  }
  return { made: gpu.pipelines.size - before, seconds: (performance.now() - t0) / 1000, stopped };
}
