// The non-finite guard of an iteration's data before its update: what scoring's finite watch found (the
// policy or reference logits, the critic's input or one of its layers) and any NaN / ±Inf among the
// credited rewards, advantages and returns. Training on such data would move the weights by garbage, so
// the trainer skips the whole update and reports each finding (phase, place, count) in metrics.skipped,
// where the run loop counts it towards runLoop.rollbackAfter like a skipped step.

import { describeNonFinite } from '../model/finite-watch.ts';
import type { ActionTargets } from './advantage-targets.ts';
import type { ActionRecord } from './rollout.ts';
import type { ScoreResult } from './score.ts';

/** The update's skip reasons for non-finite inputs ([] when all are finite). */
export function nonFiniteInputs(
  score: Pick<ScoreResult, 'nonFinite'>,
  targets: ReadonlyMap<ActionRecord, ActionTargets>,
  roles: readonly string[],
): string[] {
  const out: string[] = [];
  if (score.nonFinite.length) out.push(`score: non-finite values in ${describeNonFinite(score.nonFinite)}; update skipped`);
  for (const field of ['reward', 'advantages', 'returns'] as const) {
    const bad = [...targets].filter(([, t]) => ([] as number[]).concat(t[field]).some((x) => !Number.isFinite(x)));
    if (!bad.length) continue;
    const agents = [...new Set(bad.map(([a]) => roles[a.agent]))].join(', ');
    out.push(
      `advantages: non-finite ${field === 'reward' ? 'credited rewards' : field} for ${bad.length} of ${targets.size} actions (${agents}); update skipped`,
    );
  }
  return out;
}
