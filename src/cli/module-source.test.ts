// A CLI run config naming its environment module by path: read relative to the config file into
// env.moduleSource (kept with the checkpoints), validated like the rest of the config.

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRunConfig } from '../config/run-config.ts';
import { withModuleSource } from './module-source.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

describe('env.module in a CLI run config', () => {
  it('reads the module next to the config into env.moduleSource', () => {
    const dir = join(ROOT, '.build/module-source-test');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'run.json'), JSON.stringify({ env: { module: '../../examples/guess.mjs', options: { max: 8 } } }));
    const json = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'));
    const config = parseRunConfig(withModuleSource(json, dir));
    expect(config.env).toEqual({
      name: 'module',
      module: '../../examples/guess.mjs',
      moduleSource: readFileSync(join(ROOT, 'examples/guess.mjs'), 'utf8'),
      options: { max: 8 },
      teamReward: 'last',
    });
    expect(withModuleSource({ env: { name: 'coop-arith' } }, dir)).toEqual({ env: { name: 'coop-arith' } });
    expect(() => withModuleSource({ env: { module: 'nope.mjs' } }, dir)).toThrow(/cannot read the environment module .*nope\.mjs/);
  });

  it('refuses a module env without its source, or with an import', () => {
    expect(() => parseRunConfig({ env: { module: 'x.mjs' } })).toThrow(/env\.module "x\.mjs": the module's source is not loaded/);
    expect(() => parseRunConfig({ env: { moduleSource: "import a from 'b';\nexport default 1;" } })).toThrow(
      /environment module "module", line 1: imports are not allowed/,
    );
    expect(parseRunConfig({ env: { name: 'mine', moduleSource: 'export default () => ({});' } }).env.name).toBe('mine');
  });
});
