// The catalogue of algorithm-layer errors raised while a run runs: a credit setting that does not work on
// an episode, arrays of mismatched shapes handed to the advantage and loss functions, a paused run. Each
// MarftError has a code, a message naming the problem, and a hint saying what to do next. An invalid graph
// or run config is a ConfigError (src/config/errors.ts).

import { CodedError } from '../common/errors.ts';
import type { ConfigErrorCode } from '../config/errors.ts';
import type { EnvErrorCode } from '../envs/errors.ts';
import type { GpuErrorCode } from '../gpu/errors.ts';
import type { ModelFileErrorCode } from '../model/errors.ts';
import type { CheckpointErrorCode } from '../platform/storage/errors.ts';

export type MarftErrorCode =
  | 'CREDIT' // credit assignment misconfigured (no reward function for a role, ...)
  | 'SHAPE' // arrays of mismatched lengths passed to advantages / losses
  | 'RUN_PAUSED' // the run loop stopped: a checkpoint could not be written (disk or quota full...)
  | 'ITERATION_ABANDONED' // a pause or stop mid-iteration: the iteration in flight was dropped, the run is back at its last completed one
  | 'NO_RUN' // an action that needs a loaded run
  | 'BUSY' // an action while the run is training
  | 'MODEL_IN_USE' // a training loop or an export's forward asked for the model while another job holds it
  | 'NO_AGENT' // a role the run does not have
  | 'ADAPTER_MISMATCH' // an agent's adapter does not fit the base model its run names (ONNX export, logits)
  | 'EPISODES_INVALID' // recorded episodes (marft inspect's JSONL): a line that is not JSON, a field missing or wrong
  | 'DEMO_INVALID' // public/demo/ holds no usable demo run (missing, or not the format scripts/make-demo-run.ts writes)
  | 'EPISODES_GROUP' // recorded episodes under GRPO: a group without exactly rollout.groupSize episodes
  | 'TRY_INPUT'; // Try the team: an empty problem or answer, a bad temperature, a typed problem for an environment that judges only its own tasks

const HINTS: Record<MarftErrorCode, string> = {
  CREDIT: 'With credit "per_step", give a reward function for every role (or a fallback), or turn reward sharing on.',
  RUN_PAUSED:
    'Free disk space (or browser storage: delete old runs), then resume the run: its last checkpoint is intact and training continues from it.',
  ITERATION_ABANDONED:
    'Nothing to do: Continue (or Step) re-runs the abandoned iteration from the same state, with the same numbers an uninterrupted run gives.',
  NO_RUN: 'Start a run, or resume one from the Runs tab first.',
  BUSY: 'Pause the run first.',
  MODEL_IN_USE: 'Wait until the job using the model finishes (or pause the run), then try again.',
  NO_AGENT: 'Pick one of the roles the run lists in the Runs tab.',
  ADAPTER_MISMATCH:
    'The run was trained on another base model than the one its config.json model.path names now (a local folder re-imported under the same name?): import the model the run was trained on, then export again.',
  EPISODES_INVALID:
    'Fix the line and field named above: each line is one episode {id, group?, turns: [{reward, actions: [{role, tokens, value | values, text?}]}]} (README: "Inspecting recorded episodes").',
  EPISODES_GROUP:
    'With GRPO every group (the "group" field) needs exactly rollout.groupSize episodes, the samples of one task: add or drop episodes, or run with a config whose groupSize matches.',
  DEMO_INVALID:
    'Rebuild the demo with `node scripts/bundle.mjs scripts/make-demo-run.ts && node .build/make-demo-run.mjs` (it writes public/demo/), then reload the page.',
  TRY_INPUT:
    "Type a problem and the answer it should get (the judge checks the team's \\boxed{} answer against it), or pick a held-out task; the temperature is 0 (greedy) to 10.",
  SHAPE: 'This is a bug in the caller: the arrays describe the same tokens or actions and must have the same length.',
};

export class MarftError extends CodedError<MarftErrorCode> {
  constructor(code: MarftErrorCode, message: string, hint = HINTS[code]) {
    super('MarftError', code, message, hint);
  }
}

/** Every code the engine (src/marft and the layers below it) can raise; the front-ends title them. */
export type EngineErrorCode = GpuErrorCode | ModelFileErrorCode | EnvErrorCode | ConfigErrorCode | MarftErrorCode | CheckpointErrorCode;

/** Throws a MarftError; a one-liner for validation code. */
export function marftFail(code: MarftErrorCode, message: string): never {
  throw new MarftError(code, message);
}

/** Throws SHAPE unless every named array has length n. */
export function checkLengths(op: string, n: number, arrays: Record<string, ArrayLike<unknown> | undefined>): void {
  for (const [name, a] of Object.entries(arrays)) {
    if (a !== undefined && a.length !== n) marftFail('SHAPE', `${op}: ${name} has length ${a.length}, expected ${n}`);
  }
}
