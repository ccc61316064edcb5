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

/** Relative import specifiers of a file (static imports and re-exports, dynamic import(), new URL(…)), not in comment lines. */
export function importsOf(text: string): string[] {
  const out: string[] = [];
  const code = text.replace(/^\s*(\/\/|\/?\*).*$/gm, '');
  for (const m of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|new URL\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) out.push(m[1]);
  return out;
}

/** The production files a production file imports (resolved to paths from the root), for the loop check. */
export function importGraph(files: Record<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [file, text] of Object.entries(files)) {
    if (isTestFile(file)) continue;
    const targets = importsOf(text).map((spec) => relative(ROOT, resolve(ROOT, dirname(file), spec))).filter((t) => Object.hasOwn(files, t) && !isTestFile(t));
    graph.set(file, [...new Set(targets)].sort());
  }
  return graph;
}

/**
 * Every import loop of `graph`, one per strongly connected component (Tarjan), each as the files of one
 * loop through it: "a.ts -> b.ts -> a.ts". Type-only imports count: a loop of types is still a loop.
 */
export function importLoops(graph: Map<string, string[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: string[] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = new Set<string>();
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.add(w);
    } while (w !== v);
    if (component.size > 1 || (graph.get(v) ?? []).includes(v)) loops.push(loopThrough(graph, component));
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return loops.sort();
}

/** The shortest loop from the first file of `component` back to itself, within the component. */
function loopThrough(graph: Map<string, string[]>, component: Set<string>): string {
  const start = [...component].sort()[0];
  const from = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    for (const w of graph.get(queue[i]) ?? []) {
      if (!component.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let at = queue[i]; at !== start; at = from.get(at)!) path.splice(1, 0, at);
        return [...path, start].join(' -> ');
      }
      if (!from.has(w)) { from.set(w, queue[i]); queue.push(w); }
    }
  }
  return start;
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

  it('no import loops among the production files of src/ and kernels/', () => {
    const files = [...sourceFiles('src'), ...sourceFiles('kernels')];
    const graph = importGraph(Object.fromEntries(files.map((f) => [f, readFileSync(join(ROOT, f), 'utf8')])));
    expect(importLoops(graph)).toEqual([]);
  });

  it('finds an import loop, type-only imports included, and names its files', () => {
    const graph = importGraph({
      'src/marft/a.ts': "import { b } from './b.ts';",
      'src/marft/b.ts': "import type { C } from './c.ts';",
      'src/marft/c.ts': "export type { A } from './a.ts';",
      'src/marft/d.ts': "import { a } from './a.ts'; import { self } from './d.ts';",
      'src/marft/e.ts': "import { a } from './a.ts';\n// import { e } from './e.ts';\n *   import { e } from './e.ts';",
      'src/marft/a.test.ts': "import { e } from './e.ts';",
    });
    expect(importLoops(graph)).toEqual(['src/marft/a.ts -> src/marft/b.ts -> src/marft/c.ts -> src/marft/a.ts', 'src/marft/d.ts -> src/marft/d.ts']);
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
