// Deferred readback: a queue of small tensors to read at the next sync point, all in one readMany (one
// submit, one wait). A training step records its stats (a loss's inputs, a finite watch, an optimiser's
// flags) into the queue as it goes and reads them where it has to wait anyway, instead of draining the GPU
// for each: every wait stalls the GPU while the CPU then records the next work.
// `snapshot` copies a tensor in the command stream (a copy, no dispatch), so a tensor that later work
// overwrites (a watch's counts, an optimiser's last-step flags) or releases is read as it was then; `read`
// reads the tensor itself and is for one that stays unchanged and allocated until the flush.

import type { Gpu } from './gpu.ts';
import { type Tensor, byteSize } from './tensor.ts';

type Values = Float32Array | Int32Array | Uint32Array;

/** A value that a ReadQueue's flush fills in; get() before that flush throws. */
export interface Later<T> {
  get(): T;
}

interface Entry {
  t: Tensor;
  /** t is the queue's own copy (snapshot), released after the read. */
  own: boolean;
  value: Values | null;
}

class Slot<T> implements Later<T> {
  private done = false;
  private v!: T;
  constructor(
    private readonly e: Entry,
    private readonly fn: (x: Values) => T,
  ) {}
  get(): T {
    if (!this.done) {
      if (!this.e.value) throw new Error(`readback of ${this.e.t.label}: read before its queue was flushed`);
      this.v = this.fn(this.e.value);
      this.done = true;
    }
    return this.v;
  }
}

export class ReadQueue {
  private queue: Entry[] = [];

  constructor(private readonly gpu: Gpu) {}

  /** Entries waiting for the next flush. */
  get size(): number {
    return this.queue.length;
  }

  /** Reads `t` at the next flush, as it is then: the caller keeps it unchanged and allocated until the flush. */
  read<T = Values>(t: Tensor, fn: (x: Values) => T = (x) => x as T): Later<T> {
    return this.add({ t, own: false, value: null }, fn);
  }

  /** Reads `t` as it is now (a copy recorded in the stream): the caller may overwrite or release it afterwards. */
  snapshot<T = Values>(t: Tensor, fn: (x: Values) => T = (x) => x as T): Later<T> {
    const copy = this.gpu.tensor(t.shape, t.dtype, `${t.label}.snapshot`);
    this.gpu.copy(t, copy, byteSize(t.shape, t.dtype));
    return this.add({ t: copy, own: true, value: null }, fn);
  }

  /** Reads every queued tensor in one readback (none when the queue is empty) and fills in their values. */
  async flush(): Promise<void> {
    const q = this.queue;
    if (!q.length) return;
    this.queue = [];
    try {
      const vs = await this.gpu.readMany(q.map((e) => e.t));
      q.forEach((e, i) => {
        e.value = vs[i];
      });
    } finally {
      for (const e of q) if (e.own) this.gpu.release(e.t);
    }
  }

  /** Drops what is queued without reading it (an abandoned step), releasing the snapshots' copies. */
  release(): void {
    for (const e of this.queue.splice(0)) if (e.own) this.gpu.release(e.t);
  }

  private add<T>(e: Entry, fn: (x: Values) => T): Later<T> {
    this.queue.push(e);
    return new Slot(e, fn);
  }
}
