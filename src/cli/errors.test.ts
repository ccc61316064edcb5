// Every marft command, given bad input (unknown flags, missing files, malformed or invalid configs, a GPU
// that cannot be had), ends with one clear message, a non-zero exit (2 for usage errors) and no stack trace.
// The GPU cases need no GPU: a driver variable naming a file that does not exist stops before Dawn loads, and
// a backend this OS lacks (MARFT_GPU_BACKEND, as on a Mac asked for Direct3D) makes Dawn find no adapter.
// (export runs on the CPU: it reads checkpoints and model files and needs no device.)

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
const FIX = `${ROOT}fixtures/parity/qwen2-tiny`;
const work = mkdtempSync(join(tmpdir(), 'marft-errors-'));
const file = (name: string, text: string): string => {
  writeFileSync(join(work, name), text);
  return join(work, name);
};
const missing = join(work, 'no-such-file');
const NO_DRIVER = { VK_ICD_FILENAMES: join(work, 'no-such-icd.json') };
const OTHER_OS = { MARFT_GPU_BACKEND: process.platform === 'win32' ? 'metal' : 'd3d12' };

interface Case {
  args: string[];
  env?: Record<string, string>;
  exit: 1 | 2;
  says: RegExp;
}

function cases(): Record<string, Case[]> {
  const malformed = file('malformed.json', '{"rollout": {');
  const invalid = file('invalid.json', '{"rollout": {"episodes": -1}}');
  const badModule = file('bad-module.mjs', 'export default {{{');
  const badEpisodes = file('bad.jsonl', '{"id":');
  const lab = `${ROOT}configs/lab.json`;
  const out = join(work, 'out');
  const gpuFails = (args: string[]): Case[] => [
    {
      args,
      env: NO_DRIVER,
      exit: 1,
      says: /VK_ICD_FILENAMES names .*no-such-icd\.json, and no such file exists\n {2}hint: point VK_ICD_FILENAMES at/,
    },
    { args, env: OTHER_OS, exit: 1, says: /no GPU: Dawn found no (Direct3D 12|Metal) adapter\n {2}hint: MARFT_GPU_BACKEND=\w+ is set/ },
  ];
  return {
    train: [
      { args: ['--bogus'], exit: 2, says: /Unknown option '--bogus'\nusage: marft train/ },
      { args: ['--config', missing], exit: 2, says: /cannot read --config .*no-such-file: ENOENT/ },
      { args: ['--config', malformed], exit: 2, says: /malformed\.json is not valid JSON/ },
      { args: ['--config', invalid], exit: 1, says: /run config: rollout\.episodes must be an integer >= 1, got -1\n {2}hint:/ },
      { args: ['--iterations', 'x', '--out', out], exit: 2, says: /--iterations must be a non-negative integer, got x/ },
      { args: ['--resume', missing], exit: 1, says: /no-such-file: no latest pointer and no state\.json here\n {2}hint:/ },
      ...gpuFails(['--iterations', '1', '--out', out]),
    ],
    eval: [
      { args: [], exit: 2, says: /give --checkpoint DIR, or --base/ },
      { args: ['--checkpoint', missing], exit: 1, says: /no latest pointer and no state\.json here/ },
      { args: ['--config', lab, '--base', '--episodes', '0'], exit: 2, says: /--episodes must be a positive integer, got 0/ },
      ...gpuFails(['--config', lab, '--base', '--episodes', '1']),
    ],
    export: [
      { args: ['--format', 'bogus', '--out', out], exit: 2, says: /--format must be zip, onnx or areal, got bogus/ },
      { args: ['--checkpoint', missing, '--out', join(work, 'x.zip')], exit: 1, says: /no latest pointer and no state\.json here/ },
      {
        args: ['--format', 'onnx', '--model', missing, '--out', join(work, 'x.onnx')],
        exit: 1,
        says: /no-such-file: cannot list the folder/,
      },
      {
        args: [
          '--format',
          'onnx',
          '--checkpoint',
          `${ROOT}fixtures/resume-v1/token.zip`,
          '--agent',
          'nobody',
          '--out',
          join(work, 'x.onnx'),
        ],
        exit: 2,
        says: /--agent nobody is not a role of the checkpoint \(planner, solver\)/,
      },
    ],
    pretrain: [
      { args: [], exit: 2, says: /--out is required/ },
      { args: ['--out', out, '--steps', 'abc'], exit: 2, says: /--steps must be an integer >= 1, got "abc"/ },
      ...gpuFails(['--out', out, '--steps', '1']),
    ],
    logits: [
      { args: ['--model', missing, '--ids', '1'], exit: 1, says: /no-such-file: cannot list the folder/ },
      { args: ['--model', FIX, '--ids', '1,x'], exit: 2, says: /--ids must be comma-separated token ids/ },
      ...gpuFails(['--model', FIX, '--ids', '1']),
    ],
    tokenize: [
      { args: ['--text', 'x'], exit: 2, says: /--model is required/ },
      { args: ['--model', missing, '--text', 'x'], exit: 1, says: /tokenizer\.json is missing\n {2}hint:/ },
    ],
    env: [
      { args: ['frob'], exit: 2, says: /unknown subcommand "frob"/ },
      { args: ['test', '--module', missing], exit: 2, says: /cannot read the environment module .*no-such-file/ },
      { args: ['test', '--module', badModule], exit: 1, says: /environment module "bad-module\.mjs", line 1: Unexpected token/ },
    ],
    inspect: [
      { args: ['--config', malformed, '--episodes', badEpisodes], exit: 2, says: /malformed\.json is not valid JSON/ },
      { args: ['--config', lab, '--episodes', missing], exit: 2, says: /cannot read --episodes .*no-such-file/ },
      { args: ['--config', lab, '--episodes', badEpisodes], exit: 1, says: /bad\.jsonl line 1: not JSON/ },
    ],
  };
}

const run = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [`${ROOT}.build/marft.mjs`, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 120_000,
  });

describe('marft errors', () => {
  beforeAll(() => {
    const b = spawnSync(process.execPath, [`${ROOT}scripts/bundle.mjs`, `${ROOT}src/cli/marft.ts`, `${ROOT}.build`], { encoding: 'utf8' });
    expect(b.status, b.stderr).toBe(0);
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const all = cases();
  it('covers every command of marft --help', () => {
    const help = run(['--help']);
    expect(help.status).toBe(0);
    const commands = [...help.stderr.matchAll(/^ {2}marft (\w+)/gm)].map((m) => m[1]);
    expect(new Set(commands)).toEqual(new Set(Object.keys(all)));
  });

  for (const [command, list] of Object.entries(all)) {
    it(`${command}: a clear message, a non-zero exit, no stack trace`, () => {
      for (const c of list) {
        const r = run([command, ...c.args], c.env);
        const what = `marft ${command} ${c.args.join(' ')} ${JSON.stringify(c.env ?? {})}\n${r.stderr}`;
        expect(r.status, what).toBe(c.exit);
        expect(r.stderr, what).toMatch(new RegExp(`marft ${command}: `));
        expect(r.stderr, what).toMatch(c.says);
        expect(`${r.stdout}\n${r.stderr}`, what).not.toMatch(/^\s+at /m);
      }
    });
  }

  it('an unknown command names the commands', () => {
    const r = run(['frobnicate']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/marft: unknown command "frobnicate"\nusage:/);
  });
});
