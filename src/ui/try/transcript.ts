// The Try panel's transcript, framework-free: the worker's TryEvents folded into what the panel shows (the
// task, each agent's text as it grows, one judgement per turn, the result), and the agents still to act in
// the turn in flight, so the page can show the team answering along the graph.

import type { TryEvent, TryResult, WorkerError } from '../../worker/api.ts';

export interface TryAction {
  id: string;
  turn: number;
  role: string;
  text: string;
  tokens: number;
}
export type TryTurn = Omit<Extract<TryEvent, { kind: 'turn' }>, 'kind'>;

export interface TryView {
  status: 'idle' | 'running' | 'stopping' | 'done' | 'stopped' | 'error';
  task: string | null;
  gold: string | null;
  /** Who answers (the worker says: a run at an iteration, or the untrained base model). */
  team: string;
  /** The acting order of a static graph (empty for a dynamic one: its orchestrator decides). */
  order: string[];
  horizon: number;
  actions: TryAction[];
  turns: TryTurn[];
  result: TryResult | null;
  error: WorkerError | null;
}

export const emptyTry = (): TryView => ({
  status: 'idle',
  task: null,
  gold: null,
  team: '',
  order: [],
  horizon: 0,
  actions: [],
  turns: [],
  result: null,
  error: null,
});

/** The transcript after `e` (a new object; actions keep their first-seen order). */
export function applyTryEvent(v: TryView, e: TryEvent): TryView {
  if (e.kind === 'task') return { ...v, task: e.task, gold: e.gold, team: e.team, order: e.order, horizon: e.horizon };
  if (e.kind === 'turn') {
    const { kind: _, ...turn } = e;
    return { ...v, turns: [...v.turns, turn] };
  }
  const i = v.actions.findIndex((a) => a.id === e.id);
  const a: TryAction = { id: e.id, turn: e.turn, role: e.role, text: e.text, tokens: e.tokens };
  return { ...v, actions: i < 0 ? [...v.actions, a] : v.actions.map((x, k) => (k === i ? a : x)) };
}

/** The turn in flight (the first one not judged yet), while the try runs; null otherwise. */
export const currentTurn = (v: TryView): number | null => (v.status === 'running' || v.status === 'stopping' ? v.turns.length : null);

/** The roles of the turn in flight that have not started answering yet, in acting order. */
export function waitingRoles(v: TryView): string[] {
  const t = currentTurn(v);
  if (t === null || t >= v.horizon || v.turns[t - 1]?.correct) return []; // a correct turn ends the episode
  const acted = new Set(v.actions.filter((a) => a.turn === t).map((a) => a.role));
  return v.order.filter((r) => !acted.has(r));
}
