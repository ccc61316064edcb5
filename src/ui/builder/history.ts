// The builder's undo/redo stack (pure): snapshots of what the builder edits — the config and the agents'
// stable ids — taken before each edit. Edits of one field in quick succession (a number typed digit by
// digit) merge into one step, so Ctrl+Z undoes the value, not its last keystroke.

import type { RunConfig } from '../../config/run-config.ts';

export interface BuilderSnapshot {
  draft: RunConfig;
  /** A stable id per agent, parallel to draft.graph.agents (React keys, selection). */
  agentIds: string[];
  /** The preset-team picker's choice. */
  preset: string;
}

export interface History {
  past: BuilderSnapshot[];
  future: BuilderSnapshot[];
  /** The key and time of the last recorded edit (merging). */
  lastKey: string | null;
  lastAt: number;
}

export const HISTORY_LIMIT = 100;
/** Edits of the same key closer than this merge into one undo step. */
export const MERGE_MS = 1000;

export const emptyHistory = (): History => ({ past: [], future: [], lastKey: null, lastAt: 0 });

/**
 * Records `before` (the state an edit is about to change). An edit with the same `key` as the previous
 * one within MERGE_MS keeps the earlier snapshot instead. Any new edit drops the redo side.
 */
export function record(h: History, before: BuilderSnapshot, key: string | null, at: number): History {
  const merge = key !== null && key === h.lastKey && at - h.lastAt < MERGE_MS && h.past.length > 0;
  const past = merge ? h.past : [...h.past, before].slice(-HISTORY_LIMIT);
  return { past, future: [], lastKey: key, lastAt: at };
}

/** The snapshot to show after an undo, and the history; null when there is nothing to undo. */
export function undo(h: History, current: BuilderSnapshot): { history: History; snapshot: BuilderSnapshot } | null {
  const snapshot = h.past[h.past.length - 1];
  if (!snapshot) return null;
  return { snapshot, history: { past: h.past.slice(0, -1), future: [current, ...h.future], lastKey: null, lastAt: 0 } };
}

/** The snapshot to show after a redo, and the history; null when there is nothing to redo. */
export function redo(h: History, current: BuilderSnapshot): { history: History; snapshot: BuilderSnapshot } | null {
  const snapshot = h.future[0];
  if (!snapshot) return null;
  return { snapshot, history: { past: [...h.past, current], future: h.future.slice(1), lastKey: null, lastAt: 0 } };
}
