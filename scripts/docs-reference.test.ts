// The generated references match their sources: docs/RUN-CONFIG.md the run-config schema, docs/CLI.md the
// CLI's help; and every flag a command's usage names has a line in its help. No GPU.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HELP } from '../src/cli/help.ts';
import { PAGES, USAGES } from './docs-reference.ts';

const ROOT = new URL('../', import.meta.url).pathname;

describe('generated references', () => {
  for (const [file, page] of Object.entries(PAGES)) {
    it(`${file} is what the generator writes`, () => {
      const committed = readFileSync(`${ROOT}${file}`, 'utf8');
      expect(committed === page(), `${file} differs from its source: run npm run docs:reference`).toBe(true);
    });
  }

  it('every command has help, and every flag of its usage a line in it', () => {
    expect(Object.keys(HELP).sort()).toEqual(Object.keys(USAGES).sort());
    for (const [name, usage] of Object.entries(USAGES)) {
      const described = new Set(HELP[name].flags.flatMap(([f]) => f.match(/--[a-z0-9-]+/g) ?? []));
      const used = new Set(usage.match(/--[a-z0-9-]+/g) ?? []);
      expect(
        [...used].filter((f) => !described.has(f)),
        `marft ${name}: flags of the usage without help`,
      ).toEqual([]);
      expect(
        [...described].filter((f) => !used.has(f)),
        `marft ${name}: help for flags the usage lacks`,
      ).toEqual([]);
    }
  });
});
