import { describe, expect, it } from 'vitest';
import { RunControl } from './run-control.ts';

describe('run control', () => {
  it('trains to the target, then is done', () => {
    const c = new RunControl();
    c.begin(false);
    expect([c.next(false), c.next(false), c.next(true)]).toEqual(['more', 'more', 'done']);
    expect(c.halts(false)).toBe(false);
  });

  it('a step runs one iteration even at the target or with a pause asked, then pauses', () => {
    const c = new RunControl();
    c.begin(true);
    expect(c.halts(true)).toBe(false); // the single iteration is not halted by its own pause
    expect(c.next(true)).toBe('one');
    expect(c.halts(false)).toBe(true);
    expect(c.next(false)).toBe('paused');
  });

  it('a pause abandons the iteration in flight and is used up at the boundary; Train calls it off', () => {
    const c = new RunControl();
    c.begin(false);
    expect(c.interrupted).toBe(false);
    expect(c.pauseNow()).toBe(true);
    expect(c.interrupted).toBe(true);
    expect(c.next(false)).toBe('paused');
    expect(c.interrupted).toBe(false);
    c.begin(false);
    c.pauseNow();
    c.resume(); // Train while pausing
    expect([c.interrupted, c.next(false)]).toEqual([false, 'more']);
  });

  it('a stop wins over a pause, is not turned into a pause, and is used up', () => {
    const c = new RunControl();
    c.begin(false);
    c.requestStop();
    expect(c.pauseNow()).toBe(false);
    expect(c.interrupted).toBe(true);
    expect(c.next(false)).toBe('stopped');
    expect(c.next(false)).toBe('more');
  });

  it('a step asked while training pauses after the iteration in flight, without abandoning it', () => {
    const c = new RunControl();
    c.begin(false);
    c.pauseAfter();
    expect([c.interrupted, c.halts(false), c.next(false)]).toEqual([false, true, 'paused']);
  });

  it('profiles the next iteration once', () => {
    const c = new RunControl();
    c.profileNext = true;
    expect([c.takeProfile(), c.takeProfile()]).toEqual([true, false]);
  });
});
