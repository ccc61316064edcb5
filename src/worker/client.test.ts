// The worker watch (client.ts): a worker that answers its pings is never marked gone, even when its calls
// take long; one that falls silent (closed, or killed by the browser, which fires no event) is gone after
// GONE_MS, and an 'error' or 'messageerror' event marks it gone at once. Calls guarded by the watch reject
// with WorkerGone instead of waiting forever. Fake timers: no real waiting.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { GONE_MS, PING_MS, type Watched, WorkerGone, WorkerWatch } from './client.ts';

function fakeWorker(alive: () => boolean) {
  const listeners = new Map<string, (e: Event) => void>();
  let pings = 0;
  const w: Watched = {
    addEventListener: (type, l) => {
      listeners.set(type, l);
    },
    ping: () => {
      pings++;
      return alive() ? Promise.resolve(Date.now()) : new Promise(() => {});
    },
  };
  return { w, fire: (type: string, e: object) => listeners.get(type)!(e as Event), pings: () => pings };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('WorkerWatch', () => {
  it('a silent worker is gone after GONE_MS; an answering one never is; pending calls reject', async () => {
    vi.useFakeTimers();
    let alive = true;
    const f = fakeWorker(() => alive);
    const watch = new WorkerWatch(f.w);
    const slow = watch.guard(new Promise((r) => setTimeout(() => r('done'), 5 * GONE_MS))); // a long call of a live worker
    await vi.advanceTimersByTimeAsync(5 * GONE_MS);
    expect(await slow).toBe('done');
    expect(watch.reason).toBeNull();
    expect(f.pings()).toBeGreaterThanOrEqual((5 * GONE_MS) / PING_MS - 1);

    const pending = watch.guard(new Promise(() => {}));
    const caught = pending.catch((e: unknown) => e);
    alive = false;
    await vi.advanceTimersByTimeAsync(GONE_MS - PING_MS);
    expect(watch.reason).toBeNull(); // not before GONE_MS of silence
    await vi.advanceTimersByTimeAsync(3 * PING_MS);
    const err = await caught;
    expect(err).toBeInstanceOf(WorkerGone);
    expect((err as WorkerGone).message).toMatch(/the lab's engine \(its Web Worker\) stopped: it has not answered for 4\d s/);
    await expect(watch.guard(new Promise(() => {}))).rejects.toBeInstanceOf(WorkerGone); // later calls too
    const n = f.pings();
    await vi.advanceTimersByTimeAsync(10 * PING_MS);
    expect(f.pings()).toBe(n); // the pings stopped
  });

  it("an 'error' or 'messageerror' event marks the worker gone at once, naming it", async () => {
    vi.useFakeTimers();
    const a = fakeWorker(() => true);
    const wa = new WorkerWatch(a.w);
    a.fire('error', { message: 'Uncaught RangeError: out of memory' });
    await expect(wa.gone).rejects.toThrow(/an uncaught error in the worker \(Uncaught RangeError: out of memory\)/);
    const b = fakeWorker(() => true);
    const wb = new WorkerWatch(b.w);
    b.fire('messageerror', {});
    await expect(wb.guard(new Promise(() => {}))).rejects.toThrow(/it received a message it could not read/);
    b.fire('error', { message: 'later' });
    expect(wb.reason).toBe('it received a message it could not read'); // the first reason stays
  });
});
