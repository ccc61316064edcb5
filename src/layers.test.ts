// The layering of docs/ARCHITECTURE.md, checked on every production import: each folder imports only the
// folders listed for it (below it), the UI reaches the engine only through the worker's API, no production
// file imports a test helper, and no production files import each other in a loop. A new import across the
// layers fails here with the file, the import and the rule it breaks. Production code also keeps no state
// at module level (state lives on a session, a worker's state object or the UI's store), apart from the
// documented exceptions of MODULE_STATE_EXCEPTIONS.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
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

/**
 * Module-level state that is right where it is, with the reason; each entry as moduleState() names it.
 * Anything else moves onto the object that owns it (a session, its platform, the worker's state, the store).
 */
const MODULE_STATE_EXCEPTIONS: Record<string, string> = {
  'src/gpu/node.ts: let shared':
    'one Dawn device per Node process, shared by its sessions (a fresh one replaces it after a loss: createNodeGpu)',
  'src/worker/client.ts: let current': "the page's one engine worker: every UI action reaches the same worker through getEngine()",
  'src/worker/client.ts: const goneListeners = [...], mutated': "who hears that the page's one engine worker is gone (onEngineGone)",
  'kernels/finite/finite.ts: let manyCode': "a program's WGSL text, built once on first use (Program.code is lazy) and constant after",
  // buffers a kernel keeps per device, keyed weakly by its Gpu: each device's own, dropped with it
  'kernels/attention/kernel.ts: const dummyMasks = new WeakMap(…)': 'the per-device placeholder mask of unmasked attention',
  'kernels/matmul/splitk.ts: const workspaces = new WeakMap(…)': 'the per-device workspace of the split-K matmul',
  'kernels/reduce/reduce.ts: const scratches = new WeakMap(…)': 'the per-device scratch pair of the reductions',
  'kernels/rope/rope.ts: const invFreqCache = new WeakMap(…)': 'the per-device inverse-frequency tables of rotary embeddings',
};

const COLLECTIONS = new Set(['Map', 'Set', 'WeakMap', 'WeakSet']);
const MUTATORS = 'push|pop|shift|unshift|splice|sort|reverse|fill|copyWithin';

/** `e` without parentheses, `as` and `satisfies`. */
function unwrap(e: ts.Expression): ts.Expression {
  while (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e)) e = e.expression;
  return e;
}

/** Whether `text` changes the array `name` in place (a mutating method, an element or its length assigned). */
function mutatesArray(text: string, name: string): boolean {
  const n = name.replace(/\$/g, '\\$');
  return new RegExp(
    `(?<![.\\w$])${n}\\s*\\.\\s*(${MUTATORS})\\s*\\(|(?<![.\\w$])${n}\\s*(\\[[^\\]]*\\]|\\.length)\\s*(=(?!=)|\\+=|-=|\\+\\+|--)`,
  ).test(text);
}

/**
 * The module-level state of one production file, as "file: let x", "file: const x = new Map(…)" or
 * "file: const x = [...], mutated": every top-level let and var, a top-level const made with new Map, Set,
 * WeakMap or WeakSet (a Map or Set typed ReadonlyMap / ReadonlySet is a table, not state), and a top-level
 * const array literal the file changes in place.
 */
export function moduleState(file: string, text: string): string[] {
  if (isTestFile(file)) return [];
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const out: string[] = [];
  for (const st of src.statements) {
    if (!ts.isVariableStatement(st)) continue;
    const flags = st.declarationList.flags;
    const kind = flags & ts.NodeFlags.Const ? 'const' : flags & ts.NodeFlags.Let ? 'let' : 'var';
    for (const d of st.declarationList.declarations) {
      const name = d.name.getText(src);
      if (kind !== 'const') {
        out.push(`${file}: ${kind} ${name}`);
        continue;
      }
      const init = d.initializer ? unwrap(d.initializer) : null;
      if (!init) continue;
      if (ts.isNewExpression(init) && ts.isIdentifier(init.expression) && COLLECTIONS.has(init.expression.text)) {
        if (!/^Readonly(Map|Set)\b/.test(d.type?.getText(src) ?? '')) out.push(`${file}: const ${name} = new ${init.expression.text}(…)`);
      } else if (ts.isArrayLiteralExpression(init) && ts.isIdentifier(d.name) && mutatesArray(text, name)) {
        out.push(`${file}: const ${name} = [...], mutated`);
      }
    }
  }
  return out;
}

/** The production files a production file imports (resolved to paths from the root), for the loop check. */
export function importGraph(files: Record<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [file, text] of Object.entries(files)) {
    if (isTestFile(file)) continue;
    const targets = importsOf(text)
      .map((spec) => relative(ROOT, resolve(ROOT, dirname(file), spec)))
      .filter((t) => Object.hasOwn(files, t) && !isTestFile(t));
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
      if (!from.has(w)) {
        from.set(w, queue[i]);
        queue.push(w);
      }
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
    if (!(ALLOWED[from] ?? []).includes(to))
      out.push(`${file} -> ${target}: ${from} may import only ${ALLOWED[from]?.join(', ') || 'nothing of src'}`);
    else if (from === 'ui' && to === 'worker' && !UI_WORKER_FILES.has(target))
      out.push(`${file} -> ${target}: the UI talks to the worker only through ${[...UI_WORKER_FILES].join(' and ')}`);
  }
  return out;
}

describe('layers', () => {
  it('every production import follows the layering', () => {
    const files = [...sourceFiles('src'), ...sourceFiles('kernels')];
    expect(files.length).toBeGreaterThan(150);
    for (const f of files)
      expect(
        layerOf(f) === null || Object.hasOwn(ALLOWED, layerOf(f)!),
        `${f}: a folder with no layer rule; add it to ALLOWED and docs/ARCHITECTURE.md`,
      ).toBe(true);
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
    expect(importLoops(graph)).toEqual([
      'src/marft/a.ts -> src/marft/b.ts -> src/marft/c.ts -> src/marft/a.ts',
      'src/marft/d.ts -> src/marft/d.ts',
    ]);
  });

  it('no module-level state in production code but the documented exceptions', () => {
    const files = [...sourceFiles('src'), ...sourceFiles('kernels')];
    const found = files.flatMap((f) => moduleState(f, readFileSync(join(ROOT, f), 'utf8')));
    expect(
      found.filter((x) => !Object.hasOwn(MODULE_STATE_EXCEPTIONS, x)),
      'module-level state: move it onto its owner, or document it in MODULE_STATE_EXCEPTIONS',
    ).toEqual([]);
    expect(
      Object.keys(MODULE_STATE_EXCEPTIONS).filter((x) => !found.includes(x)),
      'exceptions that no longer exist',
    ).toEqual([]);
  });

  it('finds module-level lets, vars, collections and mutated arrays, not tables or code in strings', () => {
    const text = [
      'let a = 0;',
      'var b;',
      'export let c = 1, d = 2;',
      'const m = new Map<string, number>();',
      'const w = new WeakMap() as WeakMap<object, number>;',
      'const list: number[] = [];',
      'export function add(x: number) { list.push(x); }',
      'const grows = [1];',
      'grows[1] = 2;',
      'const TABLE: ReadonlyMap<string, number> = new Map([["a", 1]]);',
      'const NAMES: ReadonlySet<string> = new Set(["x"]);',
      'const FIXED = [1, 2, 3];',
      'const other = { list: [] as number[] }; other.list.push(1);',
      'function f() { let local = 0; const inner = new Map(); return [local, inner]; }',
      'const PROGRAM = `let notCode = 1;\nconst alsoNot = new Map();`;',
    ].join('\n');
    expect(moduleState('src/marft/x.ts', text)).toEqual([
      'src/marft/x.ts: let a',
      'src/marft/x.ts: var b',
      'src/marft/x.ts: let c',
      'src/marft/x.ts: let d',
      'src/marft/x.ts: const m = new Map(…)',
      'src/marft/x.ts: const w = new WeakMap(…)',
      'src/marft/x.ts: const list = [...], mutated',
      'src/marft/x.ts: const grows = [...], mutated',
    ]);
    expect(moduleState('src/marft/x.test.ts', 'let a = 0;')).toEqual([]);
    expect(moduleState('src/marft/testing.ts', 'let a = 0;')).toEqual([]);
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
