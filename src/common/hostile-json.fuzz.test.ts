// Deeply nested and huge JSON in every file the lab parses: state.json, the run config, config.json,
// tokenizer.json, tokenizer_config.json, a safetensors header and a dataset. Each is refused with its
// layer's typed error (naming the depth) or read, never an untyped RangeError from a stack overflow.

import { afterAll, describe, expect, it } from 'vitest';
import { type ReliabilityRow, Tally, outcomeOfAsync, recordReliability } from '../../scripts/reliability.ts';
import { ConfigError } from '../config/errors.ts';
import { parseRunConfig } from '../config/run-config.ts';
import { tinyRunConfig } from '../config/testing.ts';
import { EnvError } from '../envs/errors.ts';
import { parseDataset } from '../envs/dataset.ts';
import { CheckpointError, parseManifest } from '../marft/checkpoint/checkpoint.ts';
import { parseModelConfig } from '../model/config.ts';
import { ModelFileError } from '../model/errors.ts';
import { parseSafetensors } from '../model/safetensors.ts';
import { loadTokenizer } from '../model/tokenizer.ts';
import { readFileSync } from 'node:fs';
import { MAX_JSON_DEPTH } from './json.ts';

const TEST = 'src/common/hostile-json.fuzz.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('hostile-json', rows));

const TOKENIZER = readFileSync(new URL('../../public/models/marft-tiny/tokenizer.json', import.meta.url), 'utf8');
const enc = (s: string) => new TextEncoder().encode(s);
/** A safetensors file whose header is `json` (8-byte length, then the header; no tensors). */
function safetensors(json: string): Uint8Array {
  const h = enc(json);
  const out = new Uint8Array(8 + h.length);
  new DataView(out.buffer).setUint32(0, h.length, true);
  out.set(h, 8);
  return out;
}

/** Each parser with `nest` wrapped around a value at a place the format allows any JSON. */
const parsers: Array<[string, (nest: (inner: string) => string) => unknown]> = [
  ['state.json', (n) => parseManifest(enc(`{"format": "marft-lab-checkpoint", "version": 1, "metrics": ${n('1')}, "sha256": "0"}`))],
  ['run config', (n) => parseRunConfig(JSON.stringify(tinyRunConfig()).replace(/^\{/, `{"seed": ${n('1')}, `))],
  ['config.json', (n) => parseModelConfig(`{"architectures": ${n('"LlamaForCausalLM"')}}`)],
  ['tokenizer.json', (n) => loadTokenizer(`{"model": ${n('{}')}}`)],
  ['tokenizer_config.json', (n) => loadTokenizer(TOKENIZER, `{"chat_template": ${n('"x"')}}`)],
  ['safetensors header', (n) => parseSafetensors(safetensors(`{"__metadata__": ${n('"x"')}}`), 'model.safetensors')],
  ['dataset (JSON)', (n) => parseDataset(`[{"problem": "2+3?", "answer": ${n('5')}}]`, 'hostile.json')],
  ['dataset (JSONL)', (n) => parseDataset(`{"problem": "2+3?", "answer": ${n('5')}}`, 'hostile.jsonl')],
];
const TYPED = [CheckpointError, ConfigError, ModelFileError, EnvError];
const arrays = (depth: number) => (inner: string) => '['.repeat(depth) + inner + ']'.repeat(depth);
const objects = (depth: number) => (inner: string) => '{"a": '.repeat(depth) + inner + '}'.repeat(depth);

describe('hostile JSON', () => {
  it('nesting 101 .. 1 000 000 levels deep is a typed error naming the depth, in every parser', async () => {
    const t = new Tally();
    for (const depth of [MAX_JSON_DEPTH + 1, 10_000, 1_000_000]) {
      for (const nest of [arrays(depth), objects(depth)]) {
        for (const [what, parse] of parsers) {
          const out = await outcomeOfAsync(async () => {
            await parse(nest);
          }, TYPED);
          expect(out, `${what} at depth ${depth}`).not.toBe('ok');
          let message = '';
          try {
            await parse(nest);
          } catch (e) {
            message = (e as Error).message;
          }
          expect(message, `${what} at depth ${depth}`).toContain(`nested more than ${MAX_JSON_DEPTH} levels deep`);
          t.add(out);
        }
      }
    }
    rows.push({
      area: 'JSON files',
      fault:
        'arrays / objects nested 101, 10 000 and 1 000 000 levels deep in state.json, the run config, config.json, tokenizer.json, tokenizer_config.json, a safetensors header, a JSON and a JSONL dataset',
      cases: t.cases,
      outcome: `${t.summary()}; each names the depth (no stack overflow)`,
      verdict: 'pass',
      test: TEST,
    });
  });

  it("shallow nesting still reaches each parser's own checks", async () => {
    // depth 3 is allowed by the cap: each parser answers with its own validation (never the cap's message)
    for (const [what, parse] of parsers) {
      let message = 'ok';
      try {
        await parse(arrays(3));
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message, what).not.toContain('levels deep');
    }
  });

  it('a huge state.json (16 MiB of metrics) is read or refused in one pass, within seconds', async () => {
    const row = '{"iteration": 0, "accuracy": 0.5},';
    const text = `{"format": "marft-lab-checkpoint", "version": 1, "metrics": [${row.repeat((16 << 20) / row.length)}{}], "sha256": "0"}`;
    const t0 = performance.now();
    const out = await outcomeOfAsync(() => parseManifest(enc(text)), [CheckpointError]);
    const ms = performance.now() - t0;
    expect(out).toBe('CheckpointError STATE_INVALID'); // its own checksum does not match
    expect(ms).toBeLessThan(20_000);
    const t = new Tally();
    t.add(out);
    rows.push({
      area: 'JSON files',
      fault: 'a 16 MiB state.json (half a million metric rows) with a wrong checksum',
      cases: 1,
      outcome: `${t.summary()}; ${(ms / 1000).toFixed(1)} s`,
      verdict: 'pass',
      test: TEST,
    });
  });
});
