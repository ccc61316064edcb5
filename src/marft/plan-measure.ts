// The run plan's check against the GPU: runs iterations of a config as the trainer does and records, per
// phase, the most bytes the engine's tensors held at once (the buffer pool's bytes in use) and the most GPU
// memory the pool held (in use plus the free buffers it keeps), for `marft train --plan --measure` and
// bench/plan.ts to print beside the plan. Every GPU buffer the engine makes comes from the pool, so its
// counters are the engine's GPU memory (staging buffers of readbacks and the uniform arenas aside).
// The critic's warm-up is skipped so that every measured iteration has the policy update the plan assumes.

import type { RunConfig } from '../config/run-config.ts';
import { type PlanModel, type PlanPhase, type RunPlan, formatBytes } from './plan.ts';
import { createTrainState, releaseTrainState } from './state.ts';
import { Trainer } from './trainer.ts';

export interface PhasePeak {
  inUse: number;
  allocated: number;
}

export interface MeasuredIteration {
  phases: Record<PlanPhase, PhasePeak>;
  /** Over the whole iteration. */
  inUse: number;
  allocated: number;
  /** Generated tokens and the longest prompt of each agent, to compare with the plan's sequences. */
  generated: number;
  prompts: Record<string, number>;
  seconds: number;
}

export interface Measured {
  /** Bytes in use before the first iteration: weights, adapters, critic, optimisers. */
  resident: number;
  iterations: MeasuredIteration[];
}

export interface MeasureOptions {
  iterations?: number;
  maxTokens?: number;
  recompute?: boolean | 'auto';
}

export async function measurePlan(m: PlanModel, config: RunConfig, o: MeasureOptions = {}): Promise<Measured> {
  const { gpu, decoder, tokenizer, envs } = m;
  const pool = gpu.pool;
  const state = createTrainState(gpu, decoder.config, { ...config, schedule: { ...config.schedule, criticWarmup: 0 } });
  const resident = pool.stats.bytesInUse;
  const zero = (): PhasePeak => ({ inUse: 0, allocated: 0 });
  let peaks: Record<PlanPhase, PhasePeak> = { rollout: zero(), score: zero(), update: zero() };
  let phase: PlanPhase = 'rollout';
  const note = (): void => {
    const p = peaks[phase];
    p.inUse = Math.max(p.inUse, pool.stats.bytesInUse);
    p.allocated = Math.max(p.allocated, pool.stats.bytesAllocated);
  };
  // counts after every request: the pool's own peak counters span iterations and phases
  const acquire = pool.acquire;
  pool.acquire = (bytes, usage, label) => {
    const b = acquire.call(pool, bytes, usage, label);
    note();
    return b;
  };
  const trainer = new Trainer({
    gpu,
    envs,
    decoder,
    tokenizer,
    state,
    maxTokens: o.maxTokens,
    recompute: o.recompute,
    // advantages run on the CPU: whatever is held then belongs to scoring's results
    onProgress: (ph) => {
      phase = ph === 'advantages' ? 'score' : ph;
      note();
    },
  });
  const iterations: MeasuredIteration[] = [];
  try {
    for (let i = 0; i < (o.iterations ?? 2); i++) {
      peaks = { rollout: zero(), score: zero(), update: zero() };
      phase = 'rollout';
      note();
      const r = await trainer.iteration();
      const prompts: Record<string, number> = {};
      for (const a of r.episodes.flatMap((e) => e.actions)) prompts[a.role] = Math.max(prompts[a.role] ?? 0, a.promptIds.length);
      const all = Object.values(peaks);
      iterations.push({
        phases: peaks,
        inUse: Math.max(...all.map((x) => x.inUse)),
        allocated: Math.max(...all.map((x) => x.allocated)),
        generated: r.episodes.reduce((s, e) => s + e.actions.reduce((x, a) => x + a.actionIds.length, 0), 0),
        prompts,
        seconds: r.metrics.seconds.total,
      });
    }
  } finally {
    pool.acquire = acquire;
    releaseTrainState(gpu, state);
  }
  return { resident, iterations };
}

/** Planned against measured bytes, per phase, of the last measured iteration. */
export function formatComparison(plan: RunPlan, measured: Measured): string[] {
  const it = measured.iterations.at(-1)!;
  const n = measured.iterations.length;
  const ratio = (a: number, b: number) => (b > 0 ? `${((a / b - 1) * 100).toFixed(1)}%` : '-');
  const row = (what: string, planned: number, got: number) =>
    `  ${what.padEnd(30)} ${formatBytes(planned).padStart(10)} ${formatBytes(got).padStart(10)} ${ratio(planned, got).padStart(8)}`;
  return [
    `measured (iteration ${n} of ${n}, the buffer pool's counters; critic warm-up skipped): ${it.generated} tokens generated, ${it.seconds.toFixed(2)} s`,
    `  longest prompts: ${Object.entries(it.prompts)
      .map(([r, t]) => `${r} ${t}`)
      .join(', ')} tokens (planned ${plan.sequences.map((s) => `${s.role} ${s.prompt}`).join(', ')})`,
    `  ${''.padEnd(30)} ${'planned'.padStart(10)} ${'measured'.padStart(10)} ${'plan off'.padStart(8)}`,
    row('resident', plan.residentBytes, measured.resident),
    ...(['rollout', 'score', 'update'] as const).map((ph) =>
      row(`${ph}: tensors at once`, plan.residentBytes + plan.phases[ph].bytes, it.phases[ph].inUse),
    ),
    row('iteration: tensors at once', plan.inUseBytes, it.inUse),
    row('iteration: GPU memory (pool)', plan.peakBytes, it.allocated),
    row('  lengths varying: at most', plan.varyingPeakBytes, it.allocated),
  ];
}
