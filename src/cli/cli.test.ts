// The marft CLI end to end: the bundled command prints what transformers printed (logits, with and
// without a PEFT adapter) and what the tokenizer library gives (ids); bad input exits with a clear message.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tinyTokenizer } from '../model/file-fixtures.ts';
import { loadTokenizer } from '../model/tokenizer.ts';
import { parseSafetensors, tensorToFloat32 } from '../model/safetensors.ts';
import { commandHelp, HELP } from './help.ts';
import { USAGES } from '../../scripts/docs-reference.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const FIX = `${ROOT}fixtures/parity/qwen2-tiny`;
const run = (...args: string[]) => spawnSync(process.execPath, [`${ROOT}.build/marft.mjs`, ...args], { encoding: 'utf8' });

describe('marft CLI', () => {
  beforeAll(() => {
    const b = spawnSync(process.execPath, [`${ROOT}scripts/bundle.mjs`, `${ROOT}src/cli/marft.ts`, `${ROOT}.build`], { encoding: 'utf8' });
    expect(b.status, b.stderr).toBe(0);
  });

  it("logits matches transformers, with and without --adapter, and within WebGPU's default limits", () => {
    const ref = parseSafetensors(new Uint8Array(readFileSync(`${FIX}/reference.safetensors`)), 'reference.safetensors');
    const ids = Array.from(tensorToFloat32(ref.tensors.get('input_ids')!)).slice(0, 11);
    const V = 96;
    for (const [args, key] of [
      [[], 'logits'],
      [['--adapter', `${FIX}/adapter`], 'logits_lora'],
      [['--limits', 'default'], 'logits'],
    ] as const) {
      const r = run('logits', '--model', FIX, '--ids', ids.join(','), ...args);
      expect(r.status, r.stderr).toBe(0);
      const rows = JSON.parse(r.stdout) as number[][];
      expect(rows).toHaveLength(11);
      const want = tensorToFloat32(ref.tensors.get(key)!);
      const err = Math.max(...rows.flatMap((row, t) => row.map((v, j) => Math.abs(v - want[t * V + j]))));
      expect(err, key).toBeLessThanOrEqual(1e-4);
    }
  });

  it('tokenize prints the ids of the tokenizer library', () => {
    const dir = mkdtempSync(join(tmpdir(), 'marft-tok-'));
    const { tokenizerJson, tokenizerConfig } = tinyTokenizer();
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig));
    const text = 'hello world, héllo!';
    const r = run('tokenize', '--model', dir, '--text', text);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(loadTokenizer(tokenizerJson, tokenizerConfig).encode(text, { addSpecialTokens: true }));
  });

  it("marft <command> --help prints the command's help (docs/CLI.md), exit 0", () => {
    for (const name of Object.keys(HELP)) {
      const r = run(name, '--help');
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toBe(`${commandHelp(name, USAGES[name])}\n`);
    }
    const top = run('--help');
    expect(top.status).toBe(0);
    expect(top.stderr).toMatch(/marft <command> --help/);
  });

  it('bad input gets a clear message and a non-zero exit', () => {
    const noDir = run('logits', '--model', '/nonexistent/model', '--ids', '1');
    expect(noDir.status).toBe(1);
    expect(noDir.stderr).toMatch(/\/nonexistent\/model: cannot list the folder/);
    const badIds = run('logits', '--model', FIX, '--ids', '1,x');
    expect(badIds.status).toBe(2);
    expect(badIds.stderr).toMatch(/--ids must be comma-separated token ids/);
    const outOfVocab = run('logits', '--model', FIX, '--ids', '1,5000');
    expect(outOfVocab.status).toBe(1);
    expect(outOfVocab.stderr).toMatch(/token id 5000 at 1 is outside the vocabulary \(0\.\.95\)/);
    const badLimits = run('logits', '--model', FIX, '--ids', '1', '--limits', 'laptop');
    expect(badLimits.status).toBe(2);
    expect(badLimits.stderr).toMatch(/--limits must be adapter or default, got laptop/);
    const noTok = run('tokenize', '--model', '/tmp', '--text', 'x');
    expect(noTok.status).toBe(1);
    expect(noTok.stderr).toMatch(/tokenizer\.json is missing/);
    expect(run('frobnicate').status).toBe(2);
    const badEnvJson = run('eval', '--config', `${ROOT}configs/duo-action.json`, '--base', '--env-options', '{precedence: 1}');
    expect(badEnvJson.status).toBe(2);
    expect(badEnvJson.stderr).toMatch(/--env-options must be a JSON object, got \{precedence: 1\}/);
    const badEnv = run('eval', '--config', `${ROOT}configs/duo-action.json`, '--base', '--env-options', '{"precedence": 2}');
    expect(badEnv.status).toBe(1);
    expect(badEnv.stderr).toMatch(/env\.options: coop-arith: precedence must be a number in \[0, 1\] or null, got 2/);
  });
});
