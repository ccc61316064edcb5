// A training log as a chart overlay: the metric history of a run that is not a run folder of the lab, read
// from what a CLI run leaves behind — `marft train --json`'s lines (one IterationMetrics a line; the
// learning matrix's <row>-s<seed>.jsonl, bench/matrix.ts) or a checkpoint's state.json (its `metrics`,
// e.g. bench/results/matrix/seed1-checkpoints/, kept without the adapters). Plain JSON writes NaN as null
// (the accuracy of an agent that does not answer), so null numbers read back as NaN, as in a checkpoint.

import type { IterationMetrics } from '../config/metrics.ts';
import { parseExact } from '../marft/checkpoint/format.ts';
import { WorkerFail } from './errors.ts';

const fail = (file: string, what: string): never => {
  throw new WorkerFail('LOG_INVALID', `${file}: ${what}`);
};

/** null (plain JSON's NaN) to NaN, in the numeric fields the charts read. */
const num = (v: unknown): number => (v === null ? Number.NaN : (v as number));

function metricsLine(v: unknown, where: string, file: string): IterationMetrics {
  const m = v as Record<string, unknown> | null;
  if (!m || typeof m !== 'object' || Array.isArray(m)) return fail(file, `${where} is not a JSON object`);
  if (typeof m.iteration !== 'number' || typeof m.teamReward !== 'number')
    return fail(file, `${where} has no iteration and teamReward numbers`);
  if (!m.agents || typeof m.agents !== 'object' || Array.isArray(m.agents)) return fail(file, `${where} has no agents object`);
  const agents = Object.fromEntries(
    Object.entries(m.agents as Record<string, Record<string, unknown>>).map(([role, a]) => {
      if (!a || typeof a !== 'object' || typeof a.reward !== 'number') fail(file, `${where}: agent ${role} has no reward number`);
      return [role, { ...a, accuracy: num(a.accuracy) }];
    }),
  );
  return { ...(m as unknown as IterationMetrics), accuracy: num(m.accuracy), agents: agents as IterationMetrics['agents'] };
}

/** The metric history in `bytes` (JSON lines of IterationMetrics, or a state.json); `file` names it in errors. */
export function parseMetricsLog(bytes: Uint8Array, file: string): IterationMetrics[] {
  const text = new TextDecoder().decode(bytes).trim();
  if (!text) return fail(file, 'is empty');
  // a state.json is one JSON document holding `metrics`; a log is one JSON object a line
  let whole: unknown = null;
  try {
    whole = parseExact(text);
  } catch {
    /* several lines: a log */
  }
  const metrics = (whole as { metrics?: unknown } | null)?.metrics;
  if (Array.isArray(metrics)) return metrics.map((m, i) => metricsLine(m, `metrics[${i}]`, file));
  if (whole !== null && text.includes('\n')) return fail(file, 'is one JSON document without metrics (not a state.json)');
  return text.split('\n').map((line, i) => {
    let v: unknown;
    try {
      v = parseExact(line);
    } catch {
      return fail(file, `line ${i + 1} is not JSON`);
    }
    return metricsLine(v, `line ${i + 1}`, file);
  });
}
