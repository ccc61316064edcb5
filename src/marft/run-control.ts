// What Train, Step, Pause and Stop ask of a run's loop: flags it reads at each iteration boundary (pause,
// stop, a single step) and inside an iteration (now: abandon the iteration in flight, as a Pause does).

/** What the loop does at an iteration boundary: halt with a status, or run one iteration (the last of a step) or more. */
export type NextStep = 'stopped' | 'paused' | 'done' | 'one' | 'more';

export class RunControl {
  private pause = false;
  private stop = false;
  private stepOnce = false;
  private now = false;
  /** Profile the next iteration to start (kept across runs until one is profiled). */
  profileNext = false;

  /** A new loop: training on, or (step) one iteration and then paused. */
  begin(step: boolean): void {
    this.pause = step;
    this.stop = false;
    this.stepOnce = step;
    this.now = false;
  }

  /** Train while the loop runs: a pause asked for is called off. */
  resume(): void {
    this.pause = false;
    this.now = false;
  }

  /** Pause after the iteration in flight (a Step while training, the end of a single step, a paused loop). */
  pauseAfter(): void {
    this.pause = true;
  }

  /** Pause within seconds, abandoning the iteration in flight; false (nothing asked) when a stop is already asked. */
  pauseNow(): boolean {
    if (this.stop) return false;
    this.pause = true;
    this.now = true;
    return true;
  }

  /** Stop within seconds, like pauseNow. */
  requestStop(): void {
    this.stop = true;
  }

  /** At an iteration boundary (`reached`: the run is at its target): what comes next; a stop or pause is used up. */
  next(reached: boolean): NextStep {
    if (this.stop) {
      this.stop = false;
      return 'stopped';
    }
    if (!this.stepOnce && this.pause) {
      this.now = false;
      return 'paused';
    }
    if (!this.stepOnce && reached) return 'done';
    const single = this.stepOnce;
    this.stepOnce = false;
    return single ? 'one' : 'more';
  }

  /** Whether the loop halts at the next boundary (a single step runs its one iteration whatever a pause says). */
  halts(single: boolean): boolean {
    return this.stop || (this.pause && !single);
  }

  /** Whether the iteration in flight is abandoned. */
  get interrupted(): boolean {
    return this.stop || this.now;
  }

  /** Whether the iteration starting now is profiled; the request is used up. */
  takeProfile(): boolean {
    const on = this.profileNext;
    this.profileNext = false;
    return on;
  }
}
