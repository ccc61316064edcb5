// `marft train --plan`: the run's memory and time plan on this GPU (src/marft/plan.ts), printed instead of
// training; with --measure it then runs iterations of the config (no checkpoints) and prints the measured
// peaks of the buffer pool beside the planned ones, phase by phase.

import type { RunConfig } from '../config/run-config.ts';
import { deviceSpeed } from '../model/device-check.ts';
import { formatPlan, planOnModel } from '../marft/plan.ts';
import { formatComparison, measurePlan } from '../marft/plan-measure.ts';
import type { LimitsMode } from '../gpu/device.ts';
import { nodeSession } from './platform.ts';

export interface PlanOptions {
  /** The device's limits (the CLI's --limits). */
  limits?: LimitsMode;
  /** GPU memory the run may use, in bytes. */
  budget?: number;
  measure: boolean;
  /** Measured iterations (the last is compared; the first also compiles the pipelines). */
  iterations: number;
  json: boolean;
  log: (line: string) => void;
}

export async function printPlan(config: RunConfig, o: PlanOptions): Promise<void> {
  const m = await nodeSession(o.log, o.limits).load(config.model.path);
  const plan = await planOnModel(m, config, { budget: o.budget, speed: await deviceSpeed(m.gpu) });
  const measured = o.measure ? await measurePlan(m, config, { iterations: o.iterations }) : null;
  if (o.json) {
    process.stdout.write(`${JSON.stringify({ plan, measured })}\n`);
    return;
  }
  for (const l of formatPlan(plan)) console.log(l);
  if (measured) for (const l of formatComparison(plan, measured)) console.log(l);
}
