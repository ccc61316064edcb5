// The engine worker's test hooks (src/worker/test-hooks.ts) ship only in the build the end-to-end tests
// use: the worker built for production has none of their code, the one built with `--mode e2e` has them.
// Builds the worker alone, in memory (nothing is written), once per mode.

import { resolve } from 'node:path';
import { type Rollup, build } from 'vite';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
/** Strings only TestHooks holds: its crash messages. */
const HOOK_TEXT = ['test hook: the engine worker crashed in the', 'test hook: the engine worker crashed during an export'];

/** The JavaScript of the engine worker built in `mode`. */
async function builtWorker(mode: string): Promise<string> {
  const out = await build({
    root: ROOT,
    configFile: resolve(ROOT, 'vite.config.ts'),
    mode,
    logLevel: 'silent',
    build: { write: false, emptyOutDir: false, rollupOptions: { input: resolve(ROOT, 'src/worker/engine.worker.ts') } },
  });
  const outputs = (Array.isArray(out) ? out : [out]) as Rollup.RollupOutput[];
  return outputs
    .flatMap((o) => o.output)
    .map((c) => (c.type === 'chunk' ? c.code : ''))
    .join('\n');
}

describe('the test hooks in the built worker', () => {
  it('are left out of the production build and kept in the end-to-end build', async () => {
    const production = await builtWorker('production');
    expect(production).toContain('debugCrash'); // the worker's API itself is there
    for (const text of HOOK_TEXT) expect(production).not.toContain(text);
    const e2e = await builtWorker('e2e');
    for (const text of HOOK_TEXT) expect(e2e).toContain(text);
  });
});
