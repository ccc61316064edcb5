// Reads the learning matrix's results folder (bench/results/matrix/): every sub-folder is one GPU-machine run's
// $OUT/matrix (bench/matrix.ts: <row>-s<seed>.jsonl one metrics line per iteration, <row>-s<seed>.eval.jsonl
// and base-<key>.eval.jsonl one line per held-out evaluation, <row>-s<seed>.job.json the job's status), or a
// folder of last checkpoints, <row>-s<seed>/<latest>/state.json, whose metric history stands in for a train
// log that did not come back. Eval lines are told apart by their fields (row and seed, or key), not by file
// name, so a transcribed file (seed1-batch1/transcribed.eval.jsonl) reads the same way; a real line wins over
// a transcribed one. A new seed's folders are picked up by being there.

import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { JobRecord } from './matrix.ts';

export type Mode = 'greedy' | 'sampled';
export interface EvalResult {
  episodes: number;
  accuracy: number;
}
/** The fields of a metrics line (IterationMetrics) the report uses. */
export interface IterationLine {
  teamReward: number;
  agents: Record<string, { reward: number; tokens: number }>;
  seconds: { total: number };
}

/** One trained row and seed. */
export interface SeedRun {
  seed: number;
  log: IterationLine[];
  after: Partial<Record<Mode, EvalResult>>;
  job: JobRecord | null;
}

export interface MatrixResults {
  /** Row name to its seeds, ascending. */
  runs: Map<string, SeedRun[]>;
  /** baseKey to the untuned model's evaluations. */
  bases: Map<string, Partial<Record<Mode, EvalResult>>>;
  /** Sub-folders read, for the report's footnote. */
  folders: string[];
}

interface EvalLine {
  row?: string;
  seed?: number;
  key?: string;
  mode: Mode;
  result: EvalResult | null;
  transcribed?: string;
}

/** The lines of a JSONL file; a line cut short (a killed process) is left out. */
const jsonl = (file: string): Array<Record<string, unknown>> =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
/** state.json writes non-finite numbers as { f64: "NaN" }. */
const num = (v: unknown): number => (typeof v === 'number' ? v : Number.NaN);
const line = (m: Record<string, unknown>): IterationLine => ({
  teamReward: num(m.teamReward),
  seconds: { total: num((m.seconds as Record<string, unknown>).total) },
  agents: Object.fromEntries(
    Object.entries(m.agents as Record<string, Record<string, unknown>>).map(([r, a]) => [
      r,
      { reward: num(a.reward), tokens: num(a.tokens) },
    ]),
  ),
});

const ID = /^(.+)-s(\d+)$/;

export function readResults(dir: string): MatrixResults {
  const runs = new Map<string, Map<number, SeedRun>>();
  const bases = new Map<string, Partial<Record<Mode, EvalResult>>>();
  const transcribed = new Set<string>(); // "<row>-s<seed>:<mode>" or "base-<key>:<mode>" read from a transcription
  const run = (row: string, seed: number): SeedRun => {
    const seeds = runs.get(row) ?? runs.set(row, new Map()).get(row)!;
    return seeds.get(seed) ?? seeds.set(seed, { seed, log: [], after: {}, job: null }).get(seed)!;
  };
  const setEval = (slot: Partial<Record<Mode, EvalResult>>, id: string, e: EvalLine) => {
    if (!e.result) return;
    const k = `${id}:${e.mode}`;
    if (slot[e.mode] && !transcribed.has(k) && e.transcribed) return; // a real line wins
    slot[e.mode] = { episodes: e.result.episodes, accuracy: e.result.accuracy };
    if (e.transcribed) transcribed.add(k);
    else transcribed.delete(k);
  };
  const folders = readdirSync(dir)
    .filter((f) => statSync(join(dir, f)).isDirectory())
    .sort();
  for (const folder of folders) {
    const d = join(dir, folder);
    for (const f of readdirSync(d).sort()) {
      const p = join(d, f);
      const logId = ID.exec(f.replace(/\.jsonl$/, ''));
      if (f.endsWith('.eval.jsonl')) {
        for (const e of jsonl(p) as unknown as EvalLine[]) {
          if (e.key) setEval(bases.get(e.key) ?? bases.set(e.key, {}).get(e.key)!, `base-${e.key}`, e);
          else if (e.row && e.seed !== undefined) setEval(run(e.row, e.seed).after, `${e.row}-s${e.seed}`, e);
        }
      } else if (f.endsWith('.job.json')) {
        const job = JSON.parse(readFileSync(p, 'utf8')) as JobRecord;
        if (job.status !== 'skipped') run(job.row, job.seed).job = job;
      } else if (f.endsWith('.jsonl') && logId) {
        run(logId[1], Number(logId[2])).log = jsonl(p).map(line);
      } else if (logId && statSync(p).isDirectory() && existsSync(join(p, 'latest'))) {
        const r = run(logId[1], Number(logId[2]));
        const latest = readFileSync(join(p, 'latest'), 'utf8').trim();
        const metrics = (JSON.parse(readFileSync(join(p, latest, 'state.json'), 'utf8')) as { metrics: Array<Record<string, unknown>> })
          .metrics;
        if (!r.log.length) r.log = metrics.map(line); // a train log, where one came back, is the same lines
      }
    }
  }
  const sorted = new Map(
    [...runs]
      .map(([row, seeds]) => [row, [...seeds.values()].filter((s) => s.log.length).sort((a, b) => a.seed - b.seed)] as const)
      .filter(([, s]) => s.length),
  );
  return { runs: sorted, bases, folders };
}
