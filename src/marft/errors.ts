// The catalogue of algorithm-layer errors: an invalid agent graph, run config, credit setting, or arrays
// of mismatched shapes handed to the advantage and loss functions. Each MarftError has a code, a message
// naming the problem (the role, the cycle, the config field path), and a hint saying what to do next.

export type MarftErrorCode =
  | 'GRAPH_EMPTY' // no agents
  | 'GRAPH_ROLE' // a bad or duplicate role name
  | 'GRAPH_PROFILE' // a profile field out of range (maxNewTokens, temperature, topK, topP...)
  | 'GRAPH_EDGE' // an edge naming an unknown role, a duplicate edge
  | 'GRAPH_CYCLE' // the dependency edges form a cycle
  | 'GRAPH_NO_ANSWER' // no agent gives the answer
  | 'GRAPH_DYNAMIC' // the orchestrator of a dynamic topology is missing or misconfigured
  | 'CONFIG_JSON' // the run config is not JSON
  | 'CONFIG_INVALID' // a run config field is missing, mistyped or out of range
  | 'CREDIT' // credit assignment misconfigured (no reward function for a role, ...)
  | 'SHAPE' // arrays of mismatched lengths passed to advantages / losses
  | 'RUN_PAUSED' // the run loop stopped: a checkpoint could not be written (disk or quota full...)
  | 'NO_RUN' // an action that needs a loaded run
  | 'BUSY' // an action while the run is training
  | 'NO_AGENT' // a role the run does not have
  | 'ADAPTER_MISMATCH'; // an agent's adapter does not fit the base model its run names (ONNX export, logits)

const HINTS: Record<MarftErrorCode, string> = {
  GRAPH_EMPTY: 'Add at least one agent (or start from a preset: solo, duo, trio, quartet).',
  GRAPH_ROLE: 'Role names must be unique and use letters, digits, _ and - (they name adapter folders and <call> targets).',
  GRAPH_PROFILE: 'Fix the agent profile: maxNewTokens an integer >= 1, temperature >= 0 (0 = greedy), topK an integer >= 0 (0 = off), topP in (0, 1].',
  GRAPH_EDGE: 'Edges are {from, to} between roles of the graph, each at most once; "to" depends on (sees the output of) "from".',
  GRAPH_CYCLE: 'Agents act in dependency order, so the edges must not loop; remove one edge of the cycle.',
  GRAPH_NO_ANSWER: 'Mark at least one agent withAnswer: true (the one that writes the final \\boxed{} answer).',
  GRAPH_DYNAMIC: 'A dynamic topology needs an orchestrator role that exists in the graph, does not answer, and a maxSteps integer >= 1.',
  CONFIG_JSON: 'The run config must be a JSON object; check for trailing commas or comments.',
  CONFIG_INVALID: 'Fix the field named above, or delete it to get the default.',
  CREDIT: 'With credit "per_step", give a reward function for every role (or a fallback), or turn reward sharing on.',
  RUN_PAUSED: 'Free disk space (or browser storage: delete old runs), then resume the run: its last checkpoint is intact and training continues from it.',
  NO_RUN: 'Start a run, or resume one from the Runs tab first.',
  BUSY: 'Pause the run first.',
  NO_AGENT: 'Pick one of the roles the run lists in the Runs tab.',
  ADAPTER_MISMATCH: 'The run was trained on another base model than the one its config.json model.path names now (a local folder re-imported under the same name?): import the model the run was trained on, then export again.',
  SHAPE: 'This is a bug in the caller: the arrays describe the same tokens or actions and must have the same length.',
};

export class MarftError extends Error {
  readonly code: MarftErrorCode;
  readonly hint: string;
  constructor(code: MarftErrorCode, message: string, hint = HINTS[code]) {
    super(`${message}\n  hint: ${hint}`);
    this.name = 'MarftError';
    this.code = code;
    this.hint = hint;
  }
}

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
