// Interruptions of the real engine (a Run over a Session whose platform gives private Dawn devices, the
// tiny model, SwiftShader): the GPU device lost during a single Step right after resuming an older
// checkpoint, while that Step writes its starting checkpoint (the run folder's latest is another
// iteration). The run recovers from the checkpoint it was resumed from, the Step completes, and its
// metrics equal those of the uninterrupted run at that iteration (same RNG, same history).

import { afterAll, describe, expect, it } from 'vitest';
import { type ReliabilityRow, recordReliability } from '../../scripts/reliability.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { memoryStore } from '../platform/storage/store.ts';
import { tinyRunConfig } from '../config/testing.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import { listCheckpoints } from './checkpoint/checkpoint.ts';
import { Run } from './run.ts';
import { type Notice, type RunStatus } from './run-events.ts';
import { lossTestSession } from './testing.ts';

const TEST = 'src/marft/interruption.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('interruption', rows));

/** The metrics that depend on the run's numbers (not on wall time). */
const numbers = (m: IterationMetrics) => ({ ...m, seconds: null, tokensPerSecond: null });

describe('interruptions of a Run', () => {
  it('a device lost in a single Step right after resuming an older checkpoint recovers from it; the metrics match', async () => {
    const devices: Gpu[] = [];
    const session = lossTestSession(devices);
    const store = memoryStore();
    const statuses: RunStatus[] = [];
    const notices: Notice[] = [];
    const metrics: IterationMetrics[] = [];
    let lose = false;
    const run = new Run(
      session,
      store,
      {
        onStatus: (e) => statuses.push(e.status),
        onNotice: (n) => notices.push(n),
        onIteration: (e) => metrics.push(e.metrics),
        onProgress: (e) => {
          if (lose && e.phase === 'checkpoint') {
            lose = false;
            session.currentDevice!.device.destroy();
          }
        },
      },
      { maxTokens: 512 },
    );
    await run.start(tinyRunConfig({ iterations: 2, rollout: { episodes: 1, horizon: 1 }, runLoop: { checkpointEvery: 1 } }), { id: 'run' });
    expect(await run.wait()).toBe('done');
    const uninterrupted = metrics.splice(0);
    expect(await run.open('run', 'ckpt-000001')).toBe(1);
    statuses.length = 0;
    lose = true;
    run.step();
    expect(await run.wait()).toBe('paused');
    expect(statuses).toEqual(['running', 'recovering', 'paused']);
    expect(notices.map((n) => [n.code, n.iteration])).toEqual([['DEVICE_LOST', 1]]);
    expect(devices).toHaveLength(2);
    expect(run.iteration).toBe(2);
    expect(metrics.map(numbers)).toEqual([numbers(uninterrupted[1])]);
    expect((await listCheckpoints(store, 'run')).find((c) => c.latest)!.iteration).toBe(2);
    run.close();
    for (const g of devices) g.device.destroy();
    rows.push({
      area: 'run (interruption)',
      fault:
        'GPU device destroyed during a single Step right after resuming an older checkpoint, while the Step saves its starting checkpoint',
      cases: 1,
      outcome:
        "recovered on a new device from the checkpoint it was resumed from (notice DEVICE_LOST), the Step completed: status running -> recovering -> paused; its metrics equal the uninterrupted run's iteration 1",
      verdict: 'pass',
      test: TEST,
    });
  });
});
