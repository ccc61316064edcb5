// Fuzzes the run config (parseRunConfig / validateConfig): structural mutations of valid configs (every
// preset field replaced, deleted or added with hostile values), byte-wise mutations of the JSON text and
// arbitrary JSON. Every case ends in a valid RunConfig or a ConfigError (CONFIG_JSON / CONFIG_INVALID)
// whose message names the field; validateConfig never throws.

import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { applyByteOps, applyJsonEdits, byteOps, jsonEdits } from '../../../scripts/fuzz.ts';
import { type ReliabilityRow, Tally, outcomeOf, recordReliability } from '../../../scripts/reliability.ts';
import { parseRunConfig, validateConfig } from '../run-config.ts';
import { CONFIG_SCHEMA } from '../run-config-schema.ts';
import { defaultRunConfig } from '../run-presets.ts';
import { ConfigError } from '../errors.ts';
import { tinyRunConfig } from '../testing.ts';

const TEST = 'src/config/fuzz/config.fuzz.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('run-config', rows));

const fieldNames = (s: typeof CONFIG_SCHEMA): string[] =>
  s.type === 'object' ? Object.entries(s.fields).flatMap(([k, v]) => [k, ...fieldNames(v)]) : s.type === 'array' ? fieldNames(s.items) : [];
const KEYS = fc.constantFrom(...new Set([...fieldNames(CONFIG_SCHEMA), '__proto__', 'constructor', 'tempreature']));

/** A parsed config must be a complete one: re-parsing it gives the same config. */
function use(input: unknown): void {
  const c = parseRunConfig(input, { checkEnv: true });
  expect(JSON.stringify(parseRunConfig(JSON.parse(JSON.stringify(c))))).toBe(JSON.stringify(c));
}

describe('run config fuzz', () => {
  const bases = [
    defaultRunConfig(),
    tinyRunConfig(),
    tinyRunConfig({ algo: 'grpo', level: 'token', credit: { method: 'per_step', perStep: { planner: 'planner' } } }),
  ];

  it('structural mutations of valid configs', () => {
    const t = new Tally();
    fc.assert(
      fc.property(fc.constantFrom(...bases), jsonEdits(KEYS), (base, edits) => {
        const input = applyJsonEdits(base, edits);
        const v = validateConfig(input); // never throws
        expect(v.config === null).toBe(v.issues.length > 0);
        for (const i of v.issues) expect(i.message.length).toBeGreaterThan(5);
        const out = outcomeOf(() => use(input), [ConfigError]);
        // (a string is taken as the config's JSON text)
        if (out !== 'ok')
          expect(
            typeof input === 'string' ? ['ConfigError CONFIG_JSON', 'ConfigError CONFIG_INVALID'] : ['ConfigError CONFIG_INVALID'],
          ).toContain(out);
        t.add(out);
      }),
      { numRuns: 3000, seed: 41 },
    );
    rows.push({
      area: 'run config',
      fault:
        'structural mutations of valid configs (any field replaced, deleted or added: hostile numbers, wrong types, unknown and __proto__ keys)',
      cases: t.cases,
      outcome: t.summary('valid configs (re-parse identical)'),
      verdict: 'pass',
      test: TEST,
    });
  });

  it('byte-wise mutations of the JSON text and arbitrary JSON', () => {
    const t = new Tally();
    const texts = bases.map((b) => new TextEncoder().encode(JSON.stringify(b, null, 2)));
    fc.assert(
      fc.property(fc.constantFrom(...texts), byteOps, (text, ops) => {
        t.add(outcomeOf(() => use(new TextDecoder().decode(applyByteOps(text, ops))), [ConfigError]));
      }),
      { numRuns: 1500, seed: 42 },
    );
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (v) => {
        t.add(outcomeOf(() => use(v), [ConfigError]));
        t.add(outcomeOf(() => use(JSON.stringify(v)), [ConfigError]));
      }),
      { numRuns: 500, seed: 43 },
    );
    rows.push({
      area: 'run config',
      fault: 'byte-wise mutations of config JSON text; arbitrary JSON values and texts',
      cases: t.cases,
      outcome: t.summary('valid configs'),
      verdict: 'pass',
      test: TEST,
    });
  });
});
