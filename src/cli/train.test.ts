// marft train / export end to end on a tiny model folder (each command is a process that compiles its
// pipelines anew, slow on SwiftShader, so exact resume and evaluation are tested in-process in
// src/marft/resume.test.ts): JSON lines whose `iteration` counts on across --resume; export writes
// per-agent PEFT adapters in a zip; a bad config is refused with the field named; --profile prints the
// last iteration's per-kernel GPU times.

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { unzipFiles } from '../platform/zip.ts';
import { tinyModelFolder, TINY_QWEN2_CONFIG } from '../model/file-fixtures.ts';
import { readPeftAdapter } from '../model/peft.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const run = (...args: string[]) => spawnSync(process.execPath, [`${ROOT}.build/marft.mjs`, ...args], { encoding: 'utf8' });
const work = mkdtempSync(join(tmpdir(), 'marft-train-'));
const modelDir = join(work, 'model');
const cfgFile = join(work, 'run.json');

describe('marft train, eval, export', () => {
  beforeAll(() => {
    const b = spawnSync(process.execPath, [`${ROOT}scripts/bundle.mjs`, `${ROOT}src/cli/marft.ts`, `${ROOT}.build`], { encoding: 'utf8' });
    expect(b.status, b.stderr).toBe(0);
    mkdirSync(modelDir);
    for (const [f, data] of Object.entries({
      ...tinyModelFolder('F32'),
      'config.json': JSON.stringify({ ...TINY_QWEN2_CONFIG, max_position_embeddings: 256 }),
    })) {
      writeFileSync(join(modelDir, f), data);
    }
    writeFileSync(
      cfgFile,
      JSON.stringify({
        seed: 7,
        iterations: 2,
        model: { path: modelDir },
        graph: {
          agents: [
            { role: 'planner', systemPrompt: 'Plan.', maxNewTokens: 3 },
            { role: 'solver', systemPrompt: 'Solve.', withAnswer: true, maxNewTokens: 3 },
          ],
          edges: [{ from: 'planner', to: 'solver' }],
        },
        env: { name: 'arithmetic', options: { difficulty: 1 } },
        rollout: { episodes: 2, horizon: 1 },
        critic: { hidden: [8] },
        lora: { r: 2, alpha: 4 },
        level: 'token',
        ppo: { lr: 1e-2, targetKl: null },
      }),
    );
  });

  it('trains, resumes and exports', () => {
    const first = run('train', '--config', cfgFile, '--iterations', '1', '--out', join(work, 'run'), '--json', '--profile');
    expect(first.status, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout.trim()).iteration).toBe(0);
    // --profile: the last iteration's per-kernel table (on stderr beside --json), matmuls among its kernels
    expect(first.stderr).toMatch(/iteration 0 while profiled .* rollout [\d.]+ s/);
    expect(first.stderr).toMatch(/^\s+[\d.]+\s+[\d.]+%\s+\d+\s+[\d.]+\s+matmul:/m);
    expect(first.stderr).toMatch(/^\s+[\d.]+\s+100\.0%\s+\d+\s+total$/m);
    const resumed = run('train', '--resume', join(work, 'run'), '--iterations', '1', '--json');
    expect(resumed.status, resumed.stderr).toBe(0);
    const r = JSON.parse(resumed.stdout.trim());
    expect(r.iteration).toBe(1);
    expect(Object.keys(r.agents)).toEqual(['planner', 'solver']);

    const zip = join(work, 'adapters.zip');
    const ex = run('export', '--checkpoint', join(work, 'run'), '--out', zip);
    expect(ex.status, ex.stderr).toBe(0);
    const files = unzipFiles(new Uint8Array(readFileSync(zip)));
    for (const role of ['planner', 'solver']) {
      const a = readPeftAdapter({
        'adapter_config.json': files[`agents/${role}/adapter_config.json`],
        'adapter_model.safetensors': files[`agents/${role}/adapter_model.safetensors`],
      });
      expect(a.config.r).toBe(2);
    }
    expect(files['config.json']).toBeDefined();
  });

  it('refuses a bad config, naming the field', () => {
    const bad = join(work, 'bad.json');
    writeFileSync(bad, JSON.stringify({ ppo: { clip: 'x' }, model: { path: modelDir } }));
    const r = run('train', '--config', bad, '--iterations', '1');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/ppo\.clip/);
    const missing = run('train', '--config', join(work, 'nope.json'));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/cannot read --config/);
  });
});
