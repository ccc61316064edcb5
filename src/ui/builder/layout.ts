// Automatic layout of the agent graph for the editor (React Flow draws it, GraphEditor.tsx): agents in
// columns by dependency depth (longest path, the acting order's layers), rows in declared order; robust
// to cycles and unknown roles, which the editor must still draw while it shows their validation messages.
// Edges that skip a layer arc above the row and back edges below it, so none hides behind a node.

import type { AgentGraph } from '../../config/graph.ts';

export interface NodePos {
  role: string;
  index: number;
  x: number;
  y: number;
  layer: number;
}

export const NODE_W = 176;
export const NODE_H = 60;
const GAP_X = 64;
const GAP_Y = 40;

export function layoutGraph(graph: AgentGraph): { nodes: NodePos[]; width: number; height: number } {
  const roles = graph.agents.map((a) => a.role);
  const dynamic = graph.dynamic ?? null;
  const parents = new Map<string, string[]>(roles.map((r) => [r, []]));
  if (!dynamic) for (const e of graph.edges) if (parents.has(e.to) && parents.has(e.from)) parents.get(e.to)!.push(e.from);
  const depth = new Map<string, number>();
  const visiting = new Set<string>();
  const depthOf = (r: string): number => {
    if (depth.has(r)) return depth.get(r)!;
    if (visiting.has(r)) return 0; // a cycle: drawn, and reported by validation
    visiting.add(r);
    const d = parents.get(r)!.reduce((m, p) => Math.max(m, depthOf(p) + 1), 0);
    visiting.delete(r);
    depth.set(r, d);
    return d;
  };
  const layerOf = (r: string, i: number): number => (dynamic ? (r === dynamic.orchestrator ? 0 : 1) : (void i, depthOf(r)));
  const rows = new Map<number, number>();
  const nodes = graph.agents.map((a, i) => {
    const layer = layerOf(a.role, i);
    const row = rows.get(layer) ?? 0;
    rows.set(layer, row + 1);
    return { role: a.role, index: i, layer, x: 16 + layer * (NODE_W + GAP_X), y: 16 + row * (NODE_H + GAP_Y) };
  });
  const layers = Math.max(1, ...nodes.map((n) => n.layer + 1));
  const maxRows = Math.max(1, ...rows.values());
  return { nodes, width: 32 + layers * NODE_W + (layers - 1) * GAP_X, height: 32 + maxRows * NODE_H + (maxRows - 1) * GAP_Y };
}

export type EdgeKind = 'next' | 'skip' | 'back';

/** How an edge is drawn: to the next layer (side to side), over skipped layers (an arc above), back (below). */
export function edgeKind(layers: ReadonlyMap<string, number>, from: string, to: string): { kind: EdgeKind; span: number } {
  const span = (layers.get(to) ?? 0) - (layers.get(from) ?? 0);
  return { kind: span === 1 ? 'next' : span > 1 ? 'skip' : 'back', span: Math.abs(span) };
}

/**
 * The SVG path of an arc from (sx, sy) to (tx, ty) bowing `dir` (-1 up, 1 down) by a height that grows
 * with the layers it spans, so arcs of different spans over one row stay apart.
 */
export function arcPath(sx: number, sy: number, tx: number, ty: number, dir: -1 | 1, span: number): string {
  const h = 28 + 22 * Math.max(1, span);
  const y = dir < 0 ? Math.min(sy, ty) - h : Math.max(sy, ty) + h;
  return `M ${sx} ${sy} C ${sx} ${y}, ${tx} ${y}, ${tx} ${ty}`;
}

/** A role name not used yet: agent_<n>. */
export function freshRole(graph: AgentGraph): string {
  const used = new Set(graph.agents.map((a) => a.role));
  for (let n = graph.agents.length + 1; ; n++) if (!used.has(`agent_${n}`)) return `agent_${n}`;
}
