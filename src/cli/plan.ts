// `marft train --plan`: the run's memory and time plan on this GPU (src/marft/plan.ts), printed instead of
// training; with --measure it then runs iterations of the config (no checkpoints) and prints the measured
// peaks of the buffer pool beside the planned ones, phase by phase.

import type { RunConfig } from '../config/run-config.ts';
import { deviceSpeed } from '../model/device-check.ts';
import { type RunPlan, formatBytes, formatPlan, planPrompts, planRun } from '../marft/plan.ts';
import { type Measured, measurePlan } from '../marft/plan-measure.ts';
import { nodeSession } from './platform.ts';

export interface PlanOptions {
  /** GPU memory the run may use, in bytes. */
  budget?: number;
  measure: boolean;
  /** Measured iterations (the last is compared; the first also compiles the pipelines). */
  iterations: number;
  json: boolean;
  log: (line: string) => void;
}

export async function printPlan(config: RunConfig, o: PlanOptions): Promise<void> {
  const m = await nodeSession(o.log).load(config.model.path);
  const gpu = m.gpu;
  const plan = planRun({
    config, model: m.model, dtype: m.decoder.weights.dtype, prompts: await planPrompts(config, m.tokenizer), fused: m.decoder.fused,
    device: { maxBufferSize: gpu.limits.maxBufferSize, maxStorageBufferBindingSize: gpu.limits.maxStorageBufferBindingSize, cpu: gpu.cpu },
    budget: o.budget, speed: await deviceSpeed(gpu),
  });
  const measured = o.measure ? await measurePlan(gpu, m.decoder, m.tokenizer, config, { iterations: o.iterations }) : null;
  if (o.json) {
    process.stdout.write(`${JSON.stringify({ plan, measured })}\n`);
    return;
  }
  for (const l of formatPlan(plan)) console.log(l);
  if (measured) for (const l of comparison(plan, measured)) console.log(l);
}

/** Planned against measured bytes, per phase, of the last measured iteration. */
export function comparison(plan: RunPlan, measured: Measured): string[] {
  const it = measured.iterations.at(-1)!;
  const n = measured.iterations.length;
  const ratio = (a: number, b: number) => (b > 0 ? `${((a / b - 1) * 100).toFixed(1)}%` : '-');
  const row = (what: string, planned: number, got: number) => `  ${what.padEnd(30)} ${formatBytes(planned).padStart(10)} ${formatBytes(got).padStart(10)} ${ratio(planned, got).padStart(8)}`;
  return [
    `measured (iteration ${n} of ${n}, the buffer pool's counters; critic warm-up skipped): ${it.generated} tokens generated, ${it.seconds.toFixed(2)} s`,
    `  longest prompts: ${Object.entries(it.prompts).map(([r, t]) => `${r} ${t}`).join(', ')} tokens (planned ${plan.sequences.map((s) => `${s.role} ${s.prompt}`).join(', ')})`,
    `  ${''.padEnd(30)} ${'planned'.padStart(10)} ${'measured'.padStart(10)} ${'plan off'.padStart(8)}`,
    row('resident', plan.residentBytes, measured.resident),
    ...(['rollout', 'score', 'update'] as const).map((ph) => row(`${ph}: tensors at once`, plan.residentBytes + plan.phases[ph].bytes, it.phases[ph].inUse)),
    row('iteration: tensors at once', plan.inUseBytes, it.inUse),
    row('iteration: GPU memory (pool)', plan.peakBytes, it.allocated),
  ];
}
