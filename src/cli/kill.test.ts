// marft train killed (SIGKILL) at each phase of an iteration, then `marft train --resume` finishes it
// with no warning: the child prints its phases with --progress, the test kills it as soon as it reads
// the next phase's line (the child runs on a little meanwhile, so the kill lands in or just after that
// phase), resumes, and kills the resumed process at the next phase, and so on; the last resume runs to
// the end. The final metric history equals an uninterrupted run's, and every checkpoint left verifies
// (none half-written). One iteration only: each of the seven processes compiles its pipelines anew, minutes
// each on SwiftShader on a loaded machine, hence the long timeout.

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReliabilityRow, recordReliability } from '../../scripts/reliability.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import { listCheckpoints, readCheckpointFiles } from '../marft/checkpoint/checkpoint.ts';
import { TINY_QWEN2_CONFIG, tinyModelFolder } from '../model/file-fixtures.ts';
import { nodeStore } from '../platform/storage/node.ts';

const TEST = 'src/cli/kill.test.ts';
const ROOT = new URL('../../', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'marft-kill-train-'));
const cfgFile = join(work, 'run.json');
const rows: ReliabilityRow[] = [];
afterAll(() => {
  recordReliability('cli-kill', rows);
  rmSync(work, { recursive: true, force: true });
});

/** Runs marft train; with `killAt` ("<iteration> <phase>") it is killed when it prints that phase. Resolves to whether it was killed. */
function train(args: string[], killAt?: string): Promise<boolean> {
  const child = spawn(process.execPath, [`${ROOT}.build/marft.mjs`, 'train', ...args, '--json', '--progress'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (killAt && !child.killed && err.includes(`progress ${killAt}`)) child.kill('SIGKILL');
    });
    child.on('exit', (code) => {
      if (child.killed) resolve(true);
      else if (code === 0 && !killAt) resolve(false);
      else reject(new Error(`marft train ${args.join(' ')} exited ${code} before the kill at ${killAt ?? '-'}:\n${err}`));
    });
  });
}

/** The run folder's final history, after checking that every checkpoint in it verifies. */
async function history(dir: string): Promise<{ metrics: IterationMetrics[]; kept: number }> {
  const store = nodeStore(dirname(dir));
  const id = basename(dir);
  const all = await listCheckpoints(store, id);
  for (const c of all) expect((await readCheckpointFiles(store, `${id}/${c.name}`)).manifest.iteration).toBe(c.iteration);
  return { metrics: (await readCheckpointFiles(store, id)).manifest.metrics, kept: all.length };
}
const numbers = (m: IterationMetrics) => ({ ...m, seconds: null, tokensPerSecond: null });

describe('marft train killed at each phase', () => {
  beforeAll(() => {
    const b = spawnSync(process.execPath, [`${ROOT}scripts/bundle.mjs`, `${ROOT}src/cli/marft.ts`, `${ROOT}.build`], { encoding: 'utf8' });
    expect(b.status, b.stderr).toBe(0);
    const modelDir = join(work, 'model');
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
        iterations: 1,
        model: { path: modelDir },
        graph: {
          agents: [
            { role: 'planner', systemPrompt: 'Plan.', maxNewTokens: 3 },
            { role: 'solver', systemPrompt: 'Solve.', withAnswer: true, maxNewTokens: 3 },
          ],
          edges: [{ from: 'planner', to: 'solver' }],
        },
        env: { name: 'arithmetic', options: { difficulty: 1 } },
        rollout: { episodes: 1, horizon: 1 },
        critic: { hidden: [8] },
        lora: { r: 2, alpha: 4 },
        level: 'token',
        ppo: { lr: 1e-2, targetKl: null },
      }),
    );
  });

  it('resumes after each kill; the history equals an uninterrupted run and every checkpoint verifies', async () => {
    const base = join(work, 'base');
    expect(await train(['--config', cfgFile, '--out', base])).toBe(false);
    const want = await history(base);
    expect(want.metrics.map((m) => m.iteration)).toEqual([0]);

    const dir = join(work, 'killed');
    const phases = ['0 rollout', '0 score', '0 advantages', '0 update', '1 checkpoint'];
    // the first process starts the run (its first checkpoint is written before the loop), the others resume it
    expect(await train(['--config', cfgFile, '--out', dir], phases[0])).toBe(true);
    for (const at of phases.slice(1)) {
      await history(dir); // after every kill: all checkpoints verify
      expect(await train(['--resume', dir], at)).toBe(true);
    }
    const after = await history(dir);
    // the last kill came while iteration 0's checkpoint was written: the resume finishes whatever is left
    expect(await train(['--resume', dir])).toBe(false);
    const got = await history(dir);
    expect(got.metrics.map(numbers)).toEqual(want.metrics.map(numbers));
    rows.push({
      area: 'interruption',
      fault: `marft train (a child process) killed with SIGKILL when its --progress output reached each phase: ${phases.map((p) => p.split(' ')[1]).join(', ')}, each kill in the resumed process of the one before`,
      cases: phases.length,
      outcome: `after every kill all checkpoints verified (sizes + SHA-256; ${after.kept} after the checkpoint-write kill); marft train --resume finished the run and its metric history equals an uninterrupted run's`,
      verdict: 'pass',
      test: TEST,
    });
  }, 2_400_000);
});
