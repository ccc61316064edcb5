// Edits of the agent graph inside a run config (pure, in place on a draft copy): adding, removing and
// renaming agents keep the edges, the orchestrator and per-step credit keys consistent. A role is the
// agent's identity: a rename is one committed edit (the builder commits on blur/Enter, never per
// keystroke) and is refused when the new name is invalid or taken, so the edges of another agent that
// bears the name on the way ("solver" while typing "solver2") never move.

import type { RunConfig } from '../../config/run-config.ts';
import { ROLE_NAME, makeProfile } from '../../config/graph.ts';
import { freshRole } from './layout.ts';

export function addAgent(d: RunConfig): number {
  const role = freshRole(d.graph);
  const tokens = d.graph.agents[0]?.maxNewTokens;
  d.graph.agents.push(
    makeProfile(
      role,
      "You are a member of a team solving a math problem. Read the problem and your teammates' messages, then write your contribution.",
      {
        description: 'Team member.',
        ...(tokens ? { maxNewTokens: tokens } : {}),
      },
    ),
  );
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

/** Why `role` cannot name agent `index` (empty, malformed, or another agent's role); null when it can. */
export function roleIssue(d: RunConfig, index: number, role: string): string | null {
  if (role === '') return 'a role must not be empty';
  if (!ROLE_NAME.test(role)) return `"${role}" must start with a letter or _ and use letters, digits, _ and -`;
  const other = d.graph.agents.findIndex((a, j) => j !== index && a.role === role);
  return other >= 0 ? `"${role}" is already the role of agent ${other + 1}: roles must be unique` : null;
}

/**
 * Renames agent `index` and everything keyed by its role (edges, per_step credit, the orchestrator);
 * returns the reason and changes nothing when the name is refused. Where an (imported) config already
 * has another agent with the old name, the keyed entries are ambiguous and stay with that agent.
 */
export function renameAgent(d: RunConfig, index: number, role: string): string | null {
  const old = d.graph.agents[index]?.role;
  if (old === undefined || old === role) return null;
  const issue = roleIssue(d, index, role);
  if (issue) return issue;
  d.graph.agents[index].role = role;
  if (d.graph.agents.some((a) => a.role === old)) return null;
  for (const e of d.graph.edges) {
    if (e.from === old) e.from = role;
    if (e.to === old) e.to = role;
  }
  if (old in d.credit.perStep) {
    d.credit.perStep[role] = d.credit.perStep[old];
    delete d.credit.perStep[old];
  }
  if (d.graph.dynamic?.orchestrator === old) d.graph.dynamic.orchestrator = role;
  return null;
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
