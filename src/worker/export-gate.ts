// One export at a time, and nothing that trains, opens or deletes a run while one runs. An export reads a
// run's checkpoint from storage (the ONNX one then merges it into the base model on the CPU; the loaded
// run's adapters are read from the GPU), so a Step, a new run or an opened run meanwhile would rewrite,
// prune or unload what it reads, and two exports would only share the worker's time and memory. The other
// action is refused, not queued: the user learns at once what is running and what to do, and no click is
// acted on minutes later. (Exports of stored runs are refused while a run trains: refuseWhileTraining.)

import { MarftError } from '../marft/errors.ts';

export class ExportGate {
  /** The export in flight, in the user's words ("the export of solver.onnx from run-…"). */
  private running: string | null = null;

  get busy(): string | null {
    return this.running;
  }

  /** Throws MODEL_IN_USE naming the export in flight, if any; `action` is what was refused ("Step"). */
  check(action: string): void {
    if (this.running === null) return;
    throw new MarftError(
      'MODEL_IN_USE',
      `${action} cannot start now: ${this.running} is running.`,
      'One export runs at a time, and training waits for it: when its download appears (a few seconds to a minute), try again.',
    );
  }

  /** Runs the export `what` holding the gate; refused while another export runs. */
  async run<T>(what: string, f: () => Promise<T>): Promise<T> {
    this.check(what.charAt(0).toUpperCase() + what.slice(1));
    this.running = what;
    try {
      return await f();
    } finally {
      this.running = null;
    }
  }
}
