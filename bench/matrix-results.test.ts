// The results folder as bench/matrix.ts and the seed-1 commit left it: a checkpoint's metrics stand in for a
// missing train log, a train log wins over them, a real eval line over a transcribed one, and a new seed's
// folder is read by being there.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readResults } from './matrix-results.ts';

const metrics = (reward: number, tokens: number) => ({
  iteration: 0,
  teamReward: reward,
  accuracy: { f64: 'NaN' },
  seconds: { total: 2 },
  agents: { solver: { reward, tokens } },
});
const evalLine = (o: Record<string, unknown>, accuracy: number) =>
  JSON.stringify({ ...o, result: { episodes: 1024, accuracy }, exitCode: 0 });

describe('matrix results', () => {
  it('reads checkpoints, logs, evals and job records of every seed folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'matrix-results-'));
    const put = (p: string, text: string) => {
      mkdirSync(join(dir, p, '..'), { recursive: true });
      writeFileSync(join(dir, p), text);
    };
    // seed 1: row a only as a checkpoint, row b as a checkpoint and a train log (the log wins)
    put('seed1-checkpoints/a-s1/latest', 'ckpt-000002\n');
    put('seed1-checkpoints/a-s1/ckpt-000002/state.json', JSON.stringify({ metrics: [metrics(0.25, 100), metrics(0.5, 120)] }));
    put('seed1-checkpoints/b-s1/latest', 'ckpt-000001\n');
    put('seed1-checkpoints/b-s1/ckpt-000001/state.json', JSON.stringify({ metrics: [metrics(0.9, 1)] }));
    put('seed1-batch2/b-s1.jsonl', `${JSON.stringify(metrics(0.1, 50))}\n${JSON.stringify(metrics(0.2, 60))}\n{"cut sh`);
    // transcribed evals; b's real greedy line (read later or earlier) wins over its transcription
    put(
      'seed1-batch1/transcribed.eval.jsonl',
      [
        evalLine({ key: 'k', mode: 'greedy', transcribed: 'x' }, 0.7),
        evalLine({ row: 'a', seed: 1, mode: 'sampled', transcribed: 'x' }, 0.4),
        evalLine({ row: 'b', seed: 1, mode: 'greedy', transcribed: 'x' }, 0.3),
      ].join('\n'),
    );
    put('seed1-batch2/b-s1.eval.jsonl', evalLine({ row: 'b', seed: 1, mode: 'greedy' }, 0.35));
    put('seed1-batch2/b-s1.job.json', JSON.stringify({ row: 'b', seed: 1, status: 'done', iterations: 2 }));
    // seed 2 of a: log, evals (one failed: result null), job record
    put('seed2-a/a-s2.jsonl', JSON.stringify(metrics(0.3, 10)));
    put(
      'seed2-a/a-s2.eval.jsonl',
      [
        evalLine({ row: 'a', seed: 2, mode: 'greedy' }, 0.75),
        JSON.stringify({ row: 'a', seed: 2, mode: 'sampled', result: null, exitCode: 1 }),
      ].join('\n'),
    );
    put('seed2-a/a-s2.job.json', JSON.stringify({ row: 'a', seed: 2, status: 'cut', iterations: 1 }));
    put('seed2-a/c-s2.job.json', JSON.stringify({ row: 'c', seed: 2, status: 'skipped', iterations: 0 }));

    const r = readResults(dir);
    expect(r.folders).toEqual(['seed1-batch1', 'seed1-batch2', 'seed1-checkpoints', 'seed2-a']);
    expect([...r.runs.keys()].sort()).toEqual(['a', 'b']); // c never trained
    const [a1, a2] = r.runs.get('a')!;
    expect([a1.seed, a2.seed]).toEqual([1, 2]);
    expect(a1.log.map((l) => [l.teamReward, l.agents.solver.tokens])).toEqual([
      [0.25, 100],
      [0.5, 120],
    ]);
    expect(a1.after).toEqual({ sampled: { episodes: 1024, accuracy: 0.4 } });
    expect(a2.after).toEqual({ greedy: { episodes: 1024, accuracy: 0.75 } });
    expect(a2.job?.status).toBe('cut');
    const [b1] = r.runs.get('b')!;
    expect(b1.log.map((l) => l.teamReward)).toEqual([0.1, 0.2]);
    expect(b1.after.greedy?.accuracy).toBe(0.35);
    expect(r.bases.get('k')).toEqual({ greedy: { episodes: 1024, accuracy: 0.7 } });
  });
});
