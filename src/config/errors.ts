// The catalogue of run-config errors: an invalid agent graph or run config (JSON text, a field missing,
// mistyped or out of range). Each ConfigError has a code, a message naming the problem (the role, the
// cycle, the config field path), and a hint saying what to do next. Errors the algorithm raises while it
// runs (credit, shapes, a paused run) are MarftErrors, in src/marft/errors.ts.

import { CodedError } from '../common/errors.ts';

export type ConfigErrorCode =
  | 'GRAPH_EMPTY' // no agents
  | 'GRAPH_ROLE' // a bad or duplicate role name
  | 'GRAPH_PROFILE' // a profile field out of range (maxNewTokens, temperature, topK, topP...)
  | 'GRAPH_EDGE' // an edge naming an unknown role, a duplicate edge
  | 'GRAPH_CYCLE' // the dependency edges form a cycle
  | 'GRAPH_NO_ANSWER' // no agent gives the answer
  | 'GRAPH_DYNAMIC' // the orchestrator of a dynamic topology is missing or misconfigured
  | 'CONFIG_JSON' // the run config is not JSON
  | 'CONFIG_INVALID' // a run config field is missing, mistyped or out of range
  | 'CONFIG_LINK'; // a shared config link is malformed, of an unknown version or too long

const HINTS: Record<ConfigErrorCode, string> = {
  GRAPH_EMPTY: 'Add at least one agent (or start from a preset: solo, duo, trio, quartet).',
  GRAPH_ROLE: 'Role names must be unique and use letters, digits, _ and - (they name adapter folders and <call> targets).',
  GRAPH_PROFILE:
    'Fix the agent profile: maxNewTokens an integer >= 1, temperature >= 0 (0 = greedy), topK an integer >= 0 (0 = off), topP in (0, 1].',
  GRAPH_EDGE: 'Edges are {from, to} between roles of the graph, each at most once; "to" depends on (sees the output of) "from".',
  GRAPH_CYCLE: 'Agents act in dependency order, so the edges must not loop; remove one edge of the cycle.',
  GRAPH_NO_ANSWER: 'Mark at least one agent withAnswer: true (the one that writes the final \\boxed{} answer).',
  GRAPH_DYNAMIC: 'A dynamic topology needs an orchestrator role that exists in the graph, does not answer, and a maxSteps integer >= 1.',
  CONFIG_JSON: 'The run config must be a JSON object; check for trailing commas or comments.',
  CONFIG_INVALID: 'Fix the field named above, or delete it to get the default.',
  CONFIG_LINK: 'Share the config as a file instead (Export JSON, then Import on the other side), or copy the whole link again.',
};

export class ConfigError extends CodedError<ConfigErrorCode> {
  constructor(code: ConfigErrorCode, message: string, hint = HINTS[code]) {
    super('ConfigError', code, message, hint);
  }
}
