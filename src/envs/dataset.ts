// The dataset environment: a user's problems with labelled answers, as a JSON array or JSONL text of
// {problem, answer} records, checked record by record with the line number of every bad one. Accepted
// aliases, only where unambiguous: `question` for `problem` (an error if both are given and differ);
// a GSM8K-style answer "reasoning #### 42" keeps what follows the last ####; without `answer`, a
// MATH-style `solution` gives its last \boxed{} content. Problems are drawn by reset(seed) with a seeded
// generator; the train/test split comes from an explicit `split` field on every record, or else from a
// seeded shuffle (splitSeed) that puts round(n * testFraction) records in test.

import { extractBoxed } from './answer.ts';
import { EnvError, envFail } from './errors.ts';
import { MathEnv, type Problem } from './mathEnv.ts';
import { Rng, shuffled } from '../common/rng.ts';
import type { EnvOptions } from './types.ts';
import { parseJson } from '../common/json.ts';

export interface DatasetRecord extends Problem {
  id: string | number;
  split?: 'train' | 'test';
  /** 1-based line of the record in the source text (its first line for JSON arrays); 0 when given as objects. */
  line: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** 1-based line of character offset `pos` in `text`. */
function lineAt(text: string, pos: number): number {
  let line = 1;
  for (let i = 0; i < pos && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** 1-based lines of increasing character offsets, in one pass over `text` (lineAt per record is quadratic). */
function linesAt(text: string, offsets: readonly number[]): number[] {
  const out: number[] = [];
  let line = 1;
  let i = 0;
  for (const pos of offsets) {
    for (; i < pos && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
    out.push(line);
  }
  return out;
}

/** Offsets of the top-level elements of a JSON array text (which JSON.parse has already accepted). */
function arrayElementOffsets(text: string): number[] {
  const out: number[] = [];
  let depth = 0;
  let inString = false;
  let expectElement = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === ' ' || c === '\n' || c === '\r' || c === '\t') continue;
    if (expectElement && depth === 1 && c !== ']') {
      out.push(i);
      expectElement = false;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') {
      depth++;
      if (depth === 1) expectElement = true;
    } else if (c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 1) expectElement = true;
  }
  return out;
}

function jsonErrorLine(text: string, e: Error): string {
  const m = /position (\d+)/.exec(e.message);
  return m ? ` at line ${lineAt(text, Number(m[1]))}` : '';
}

/** Checks one raw record; returns the record or a problem description. */
function toRecord(raw: unknown, index: number, line: number): DatasetRecord | string {
  if (!isObject(raw)) return `expected an object, got ${Array.isArray(raw) ? 'an array' : JSON.stringify(raw)}`;
  const p = raw.problem;
  const q = raw.question;
  if (p !== undefined && typeof p !== 'string') return `"problem" must be a string, got ${typeof p}`;
  if (q !== undefined && typeof q !== 'string') return `"question" must be a string, got ${typeof q}`;
  if (p !== undefined && q !== undefined && p !== q) return 'has both "problem" and "question" with different texts; keep one';
  const problem = p ?? q;
  if (problem === undefined) return `missing "problem" (or "question"); fields present: ${Object.keys(raw).join(', ') || 'none'}`;
  if (problem.trim() === '') return '"problem" is empty';

  let answer: string;
  const a = raw.answer;
  if (a !== undefined) {
    if (typeof a === 'number' && Number.isFinite(a)) answer = String(a);
    else if (typeof a === 'string') answer = a.includes('####') ? a.slice(a.lastIndexOf('####') + 4).trim() : a.trim();
    else return `"answer" must be a string or a number, got ${JSON.stringify(a)}`;
  } else if (raw.solution !== undefined) {
    if (typeof raw.solution !== 'string') return `"solution" must be a string, got ${typeof raw.solution}`;
    const boxed = extractBoxed(raw.solution);
    if (boxed === null) return 'has no "answer", and its "solution" has no \\boxed{} answer to take';
    answer = boxed.trim();
  } else {
    return `missing "answer"; fields present: ${Object.keys(raw).join(', ') || 'none'}`;
  }
  if (answer === '') return '"answer" is empty';

  const split = raw.split;
  if (split !== undefined && split !== 'train' && split !== 'test')
    return `"split" must be "train" or "test", got ${JSON.stringify(split)}`;
  const id = typeof raw.id === 'string' || typeof raw.id === 'number' ? raw.id : index;
  return { problem, answer, id, line, ...(split ? { split } : {}) };
}

function collect(raws: Array<{ raw: unknown; line: number }>, source: string, lineWord: boolean): DatasetRecord[] {
  const records: DatasetRecord[] = [];
  const bad: string[] = [];
  raws.forEach(({ raw, line }, i) => {
    const r = toRecord(raw, i, line);
    if (typeof r === 'string') bad.push(`${lineWord ? `line ${line}` : `record ${i}`}: ${r}`);
    else records.push(r);
  });
  if (bad.length) {
    const shown = bad.slice(0, 10).join('\n  ');
    envFail(
      'DATASET_FIELD',
      `${source}: ${bad.length} bad record${bad.length > 1 ? 's' : ''}:\n  ${shown}${bad.length > 10 ? `\n  ... and ${bad.length - 10} more` : ''}`,
    );
  }
  if (records.length === 0) envFail('DATASET_EMPTY', `${source}: the dataset has no records`);
  const withSplit = records.filter((r) => r.split).length;
  if (withSplit > 0 && withSplit < records.length) {
    const first = records.find((r) => !r.split)!;
    envFail(
      'DATASET_SPLIT',
      `${source}: ${withSplit} of ${records.length} records have a "split" field but not all (first without: ${lineWord ? `line ${first.line}` : `record ${first.id}`})`,
    );
  }
  return records;
}

/** Parses JSON (an array of records) or JSONL (one record per line) text into checked records. */
export function parseDataset(text: string, source = 'dataset'): DatasetRecord[] {
  const body = text.replace(/^\uFEFF/, '');
  const trimmed = body.trimStart();
  if (trimmed === '') envFail('DATASET_EMPTY', `${source}: the file is empty`);
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = parseJson(body);
    } catch (e) {
      envFail('DATASET_PARSE', `${source}: invalid JSON${jsonErrorLine(body, e as Error)} (${(e as Error).message})`);
    }
    const arr = parsed as unknown[];
    const lines = linesAt(body, arrayElementOffsets(body));
    return collect(
      arr.map((raw, i) => ({ raw, line: lines[i] ?? 1 })),
      source,
      true,
    );
  }
  const raws: Array<{ raw: unknown; line: number }> = [];
  const lines = body.split(/\r?\n/);
  const badJson: string[] = [];
  lines.forEach((l, i) => {
    if (l.trim() === '') return;
    try {
      raws.push({ raw: parseJson(l), line: i + 1 });
    } catch (e) {
      badJson.push(`line ${i + 1}: ${(e as Error).message}`);
    }
  });
  if (badJson.length) {
    const hint =
      trimmed.startsWith('{') && badJson.length > 1 && raws.length === 0
        ? ' (is it one pretty-printed JSON object? JSONL needs one record per line; a JSON file must be an array)'
        : '';
    envFail(
      'DATASET_PARSE',
      `${source}: ${badJson.length} line${badJson.length > 1 ? 's are' : ' is'} not valid JSON${hint}:\n  ${badJson.slice(0, 10).join('\n  ')}`,
    );
  }
  return collect(raws, source, true);
}

/** Checks records given as objects (e.g. from a JSON import); problems are reported as "record i". */
export function datasetFromObjects(items: unknown[], source = 'dataset'): DatasetRecord[] {
  if (!Array.isArray(items)) envFail('DATASET_PARSE', `${source}: expected an array of records`);
  return collect(
    items.map((raw) => ({ raw, line: 0 })),
    source,
    false,
  );
}

export interface SplitOptions {
  /** Fraction of records in test when the records carry no split field. Default 0.1. */
  testFraction?: number;
  /** Seed of the shuffle that makes the split. Default 0. */
  splitSeed?: number;
}

/** Train/test split: the records' own split fields, or a seeded shuffle (round(n * testFraction) in test). */
export function splitDataset<R extends { split?: 'train' | 'test' }>(
  records: readonly R[],
  options: SplitOptions = {},
): { train: R[]; test: R[] } {
  if (records.some((r) => r.split)) {
    return { train: records.filter((r) => r.split === 'train'), test: records.filter((r) => r.split === 'test') };
  }
  const f = options.testFraction ?? 0.1;
  if (typeof f !== 'number' || !(f >= 0 && f < 1))
    envFail('ENV_OPTIONS', `dataset: testFraction must be a number in [0, 1), got ${JSON.stringify(f)}`);
  const order = shuffled(records, `split:${options.splitSeed ?? 0}`);
  const nTest = Math.round(records.length * f);
  return { test: order.slice(0, nTest), train: order.slice(nTest) };
}

export interface DatasetEnvOptions extends EnvOptions, SplitOptions {
  /** JSON / JSONL text, or already-parsed records. */
  data: string | unknown[];
  /** A name for messages (the file name). */
  source?: string;
  /** Which part to draw from. Default 'train'. */
  split?: 'train' | 'test' | 'all';
}

export class DatasetEnv extends MathEnv {
  readonly records: DatasetRecord[];
  constructor(records: DatasetRecord[], horizon?: number, name = 'dataset') {
    // Seeded sampling with replacement: reset(seed) draws uniformly from a generator seeded by `seed`.
    super(name, (seed) => records[Rng.fromSeed(`dataset:${seed}`).int(records.length)], horizon);
    this.records = records;
  }
}

export function createDatasetEnv(options: DatasetEnvOptions): DatasetEnv {
  if (!options || options.data === undefined)
    envFail('ENV_OPTIONS', 'dataset: options.data is required (the JSON or JSONL text, or an array of records)');
  const source = options.source ?? 'dataset';
  const all = typeof options.data === 'string' ? parseDataset(options.data, source) : datasetFromObjects(options.data, source);
  const which = options.split ?? 'train';
  if (which !== 'train' && which !== 'test' && which !== 'all')
    envFail('ENV_OPTIONS', `dataset: split must be "train", "test" or "all", got ${JSON.stringify(which)}`);
  const records = which === 'all' ? all : splitDataset(all, options)[which];
  if (records.length === 0) {
    throw new EnvError('DATASET_EMPTY', `${source}: the ${which} split is empty (${all.length} records in all)`);
  }
  return new DatasetEnv(records, options.horizon);
}
