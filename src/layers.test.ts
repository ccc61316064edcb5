// The layering of docs/ARCHITECTURE.md, checked on every production import: each folder imports only the
// folders listed for it (below it), the UI reaches the engine only through the worker's API, and no
// production file imports a test helper. A new import across the layers fails here with the file, the
// import and the rule it breaks.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');

/** Layer -> the layers its production files may import (besides themselves). */
const ALLOWED: Record<string, string[]> = {
  common: [],
  platform: ['common'],
  gpu: ['common'],
  kernels: ['gpu', 'common'],
  model: ['kernels', 'gpu', 'common'],
  envs: ['common'],
  config: ['envs', 'common'],
  marft: ['config', 'envs', 'model', 'gpu', 'platform', 'common'],
  pretrain: ['marft', 'config', 'envs', 'model', 'gpu', 'platform', 'common'],
  worker: ['marft', 'config', 'gpu', 'platform', 'common'],
  cli: ['pretrain', 'marft', 'config', 'envs', 'model', 'gpu', 'platform', 'common'],
  ui: ['worker', 'config', 'platform', 'common'],
};
/** The worker files the UI may import: its API types and its client, nothing of the engine behind them. */
const UI_WORKER_FILES = new Set(['src/worker/api.ts', 'src/worker/client.ts']);

const isTestFile = (f: string): boolean => /\.(test|spec|bench)\.tsx?$/.test(f) || /(^|\/)(testing[\w-]*|[\w-]*fixtures)\.ts$/.test(f);

function layerOf(file: string): string | null {
  const m = /^(?:src\/([\w-]+)\/|(kernels)\/)/.exec(file);
  return m ? (m[1] ?? m[2]) : null;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** Relative import specifiers of a file (static imports and re-exports, dynamic import(), new URL(…)). */
export function importsOf(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|new URL\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) out.push(m[1]);
  return out;
}

/** Every broken rule of one file, as "file -> target: rule". */
export function violations(file: string, text: string): string[] {
  const from = layerOf(file);
  if (!from || isTestFile(file)) return [];
  const out: string[] = [];
  for (const spec of importsOf(text)) {
    const target = relative(ROOT, resolve(ROOT, dirname(file), spec));
    const to = layerOf(target);
    if (isTestFile(target)) out.push(`${file} -> ${target}: production code imports a test helper`);
    if (!to || to === from) continue;
    if (!(ALLOWED[from] ?? []).includes(to)) out.push(`${file} -> ${target}: ${from} may import only ${ALLOWED[from]?.join(', ') || 'nothing of src'}`);
    else if (from === 'ui' && to === 'worker' && !UI_WORKER_FILES.has(target)) out.push(`${file} -> ${target}: the UI talks to the worker only through ${[...UI_WORKER_FILES].join(' and ')}`);
  }
  return out;
}

describe('layers', () => {
  it('every production import follows the layering', () => {
    const files = [...sourceFiles('src'), ...sourceFiles('kernels')];
    expect(files.length).toBeGreaterThan(150);
    for (const f of files) expect(layerOf(f) === null || Object.hasOwn(ALLOWED, layerOf(f)!), `${f}: a folder with no layer rule; add it to ALLOWED and docs/ARCHITECTURE.md`).toBe(true);
    const found = files.flatMap((f) => violations(f, readFileSync(join(ROOT, f), 'utf8')));
    expect(found).toEqual([]);
  });

  it('catches the forbidden directions of the architecture', () => {
    const bad: Array<[string, string]> = [
      ['src/ui/App.tsx', "import { Decoder } from '../model/decoder.ts';"],
      ['src/ui/App.tsx', "import { Trainer } from '../marft/trainer.ts';"],
      ['src/ui/App.tsx', "import { acquireGpu } from '../gpu/browser.ts';"],
      ['src/ui/App.tsx', "import { runs } from '../worker/runs.ts';"],
      ['src/worker/api.ts', "import { Decoder } from '../model/decoder.ts';"],
      ['src/worker/api.ts', "import { embed } from '../../kernels/embedding/embedding.ts';"],
      ['src/marft/update.ts', "import { adamwUpdate } from '../../kernels/adamw/adamw.ts';"],
      ['src/model/decoder.ts', "import type { RunConfig } from '../config/run-config.ts';"],
      ['src/model/decoder.ts', "import { Trainer } from '../marft/trainer.ts';"],
      ['src/gpu/gpu.ts', "import { Decoder } from '../model/decoder.ts';"],
      ['kernels/matmul/matmul.ts', "import { Decoder } from '../../src/model/decoder.ts';"],
      ['src/envs/coop.ts', "export { Decoder } from '../model/decoder.ts';"],
      ['src/marft/trainer.ts', "const t = await import('./testing.ts');"],
    ];
    for (const [file, line] of bad) expect(violations(file, line), `${file}: ${line}`).toHaveLength(1);
    expect(violations('src/ui/App.tsx', "import type { EngineApi } from '../worker/api.ts';")).toEqual([]);
    expect(violations('src/marft/trainer.test.ts', "import { adamwUpdate } from '../../kernels/adamw/adamw.ts';")).toEqual([]);
  });
});
