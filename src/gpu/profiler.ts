// Per-kernel GPU time through timestamp queries: while profiling, every dispatch runs in a compute pass of
// its own whose begin and end timestamps are written to a query set; the times are summed by kernel, named
// `<program key>/<entry point>` (e.g. `lora/backward_dx`); profile-table.ts turns them into the tables
// the CLI, the benchmarks and the lab's Profile panel show.
// Profiling serialises the passes, so it measures where time goes, not the fastest schedule.

import type { KernelTime } from '../common/profile-table.ts';

const CAPACITY = 2048; // dispatches per query set before it is resolved

export class Profiler {
  private readonly querySet: GPUQuerySet;
  private readonly resolve: GPUBuffer;
  private keys: string[] = [];
  private readonly pending: Array<Promise<Array<[string, number]>>> = [];

  constructor(private readonly device: GPUDevice) {
    this.querySet = device.createQuerySet({ type: 'timestamp', count: CAPACITY * 2, label: 'profiler' });
    this.resolve = device.createBuffer({ size: CAPACITY * 16, usage: 0x0200 | 0x0004, label: 'profiler.resolve' }); // QUERY_RESOLVE | COPY_SRC
  }

  /** The timestampWrites of the next dispatch's pass; null when the set is full (call flush first). */
  next(key: string): GPUComputePassTimestampWrites | null {
    const i = this.keys.length;
    if (i >= CAPACITY) return null;
    this.keys.push(key);
    return { querySet: this.querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 };
  }

  get full(): boolean {
    return this.keys.length >= CAPACITY;
  }

  /** Resolves the recorded queries into a readback (recorded into `encoder`, read after its submit). */
  flush(encoder: GPUCommandEncoder, afterSubmit: (fn: () => void) => void): void {
    const n = this.keys.length;
    if (!n) return;
    const keys = this.keys;
    this.keys = [];
    const staging = this.device.createBuffer({ size: n * 16, usage: 0x0001 | 0x0008, label: 'profiler.read' }); // MAP_READ | COPY_DST
    encoder.resolveQuerySet(this.querySet, 0, n * 2, this.resolve, 0);
    encoder.copyBufferToBuffer(this.resolve, 0, staging, 0, n * 16);
    this.pending.push(
      new Promise((done) =>
        afterSubmit(() => {
          void staging.mapAsync(1).then(() => {
            const t = new BigUint64Array(staging.getMappedRange().slice(0));
            staging.unmap();
            staging.destroy();
            done(keys.map((k, i) => [k, Number(t[2 * i + 1] - t[2 * i]) / 1e6]));
          });
        }),
      ),
    );
  }

  async report(): Promise<KernelTime[]> {
    const byKey = new Map<string, KernelTime>();
    for (const rows of await Promise.all(this.pending)) {
      for (const [key, ms] of rows) {
        const k = byKey.get(key) ?? { key, ms: 0, calls: 0 };
        k.ms += Math.max(0, ms);
        k.calls++;
        byKey.set(key, k);
      }
    }
    this.pending.length = 0;
    return [...byKey.values()].sort((a, b) => b.ms - a.ms);
  }

  destroy(): void {
    this.querySet.destroy();
    this.resolve.destroy();
  }
}
