// Edits of the agent graph inside a run config (pure, in place on a draft copy): adding, removing and
// renaming agents keep the edges, the orchestrator and per-step credit keys consistent.

import type { RunConfig } from '../../config/run-config.ts';
import { makeProfile } from '../../config/graph.ts';
import { freshRole } from './layout.ts';

export function addAgent(d: RunConfig): number {
  const role = freshRole(d.graph);
  const tokens = d.graph.agents[0]?.maxNewTokens;
  d.graph.agents.push(makeProfile(role, 'You are a member of a team solving a math problem. Read the problem and your teammates\' messages, then write your contribution.', {
    description: 'Team member.', ...(tokens ? { maxNewTokens: tokens } : {}),
  }));
  return d.graph.agents.length - 1;
}

export function removeAgent(d: RunConfig, index: number): void {
  const role = d.graph.agents[index]?.role;
  if (role === undefined) return;
  d.graph.agents.splice(index, 1);
  d.graph.edges = d.graph.edges.filter((e) => e.from !== role && e.to !== role);
  delete d.credit.perStep[role];
  if (d.graph.dynamic?.orchestrator === role) d.graph.dynamic = null;
}

export function renameAgent(d: RunConfig, index: number, role: string): void {
  const old = d.graph.agents[index]?.role;
  if (old === undefined || old === role) return;
  d.graph.agents[index].role = role;
  for (const e of d.graph.edges) {
    if (e.from === old) e.from = role;
    if (e.to === old) e.to = role;
  }
  if (old in d.credit.perStep) {
    d.credit.perStep[role] = d.credit.perStep[old];
    delete d.credit.perStep[old];
  }
  if (d.graph.dynamic?.orchestrator === old) d.graph.dynamic.orchestrator = role;
}

/** Adds from -> to unless it exists or is a self-loop; whether it was added. */
export function addEdge(d: RunConfig, from: string, to: string): boolean {
  if (from === to || d.graph.edges.some((e) => e.from === from && e.to === to)) return false;
  d.graph.edges.push({ from, to });
  return true;
}

export function removeEdge(d: RunConfig, index: number): void {
  d.graph.edges.splice(index, 1);
}
