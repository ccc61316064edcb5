// The agent graph as an SVG: agents laid out by dependency depth, edges as arrows ("to" sees "from").
// Click an agent to edit it; "connect" from the selected agent, then click the agent that should see it.
// Click an edge to remove it. Validation messages of the graph show under it.

import { useShallow } from 'zustand/react/shallow';
import { editDraft, freshAgentIds, selectAgentIds, selectConnectFrom, selectDraft, selectSelectedAgent, useLab } from '../store.ts';
import { FieldIssues } from './fields.tsx';
import { addAgent, addEdge, removeEdge } from './graph-ops.ts';
import { NODE_H, NODE_W, layoutGraph } from './layout.ts';

const selectGraphIssueRoles = (s: ReturnType<typeof useLab.getState>): number[] =>
  s.issues.map((i) => /^graph\.agents\[(\d+)\]/.exec(i.path)).filter((m): m is RegExpExecArray => !!m).map((m) => Number(m[1]));

export function GraphEditor() {
  const draft = useLab(selectDraft);
  const selected = useLab(selectSelectedAgent);
  const connectFrom = useLab(selectConnectFrom);
  const ids = useLab(selectAgentIds);
  const badAgents = useLab(useShallow(selectGraphIssueRoles));
  const graph = draft.graph;
  const { nodes, width, height } = layoutGraph(graph);
  const pos = new Map(nodes.map((n) => [n.role, n]));
  const dynamic = graph.dynamic ?? null;

  const clickNode = (i: number) => {
    const role = graph.agents[i].role;
    if (connectFrom && connectFrom !== role) {
      editDraft((d) => { addEdge(d, connectFrom, role); });
      useLab.setState({ connectFrom: null, selectedAgent: i });
      return;
    }
    useLab.setState({ selectedAgent: i, connectFrom: null });
  };

  return (
    <section className="card graph-card">
      <div className="row spread">
        <h2>Agents</h2>
        <div className="row">
          <button type="button" data-testid="add-agent" onClick={() => { let i = 0; editDraft((d, agentIds) => { i = addAgent(d); agentIds.push(...freshAgentIds(1)); }); useLab.setState({ selectedAgent: i }); }}>+ Add agent</button>
          {!dynamic && (
            <button type="button" data-testid="connect-agent" className={connectFrom ? 'active' : ''} disabled={graph.agents.length < 2}
              onClick={() => useLab.setState({ connectFrom: connectFrom ? null : graph.agents[selected]?.role ?? null })}>
              {connectFrom ? `Click the agent that sees ${connectFrom}… (cancel)` : 'Connect from selected'}
            </button>
          )}
        </div>
      </div>
      {dynamic && <p className="hint">Dynamic topology: {dynamic.orchestrator} routes the task with &lt;call&gt;role&lt;/call&gt; (up to {dynamic.maxSteps} calls); edges are not used.</p>}
      <div className="graph-scroll">
        <svg data-testid="graph-editor" width={Math.max(width, 300)} height={height} role="group" aria-label="agent graph">
          <defs>
            <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M 0 0 L 10 5 L 0 10 z" fill="#7a8394" />
            </marker>
          </defs>
          {!dynamic && graph.edges.map((e, i) => {
            const a = pos.get(e.from), b = pos.get(e.to);
            if (!a || !b) return null;
            const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2;
            const back = x2 <= x1;
            const d = back
              ? `M ${a.x + NODE_W / 2} ${a.y + NODE_H} C ${a.x + NODE_W / 2} ${a.y + NODE_H + 40}, ${b.x + NODE_W / 2} ${b.y + NODE_H + 40}, ${b.x + NODE_W / 2} ${b.y + NODE_H}`
              : `M ${x1} ${y1} C ${x1 + 35} ${y1}, ${x2 - 35} ${y2}, ${x2 - 2} ${y2}`;
            return (
              <g key={`${e.from}-${e.to}-${i}`} className="edge" onClick={() => editDraft((dr) => removeEdge(dr, i))}>
                <title>{`${e.from} → ${e.to} (click to remove)`}</title>
                <path d={d} className="edge-hit" />
                <path d={d} className="edge-line" markerEnd="url(#arrow)" />
              </g>
            );
          })}
          {nodes.map((n) => {
            const p = graph.agents[n.index];
            const cls = ['node', n.index === selected ? 'selected' : '', badAgents.includes(n.index) ? 'bad' : '', connectFrom && connectFrom !== n.role ? 'target' : ''].join(' ');
            return (
              <g key={ids[n.index] ?? n.index} className={cls} transform={`translate(${n.x},${n.y})`} onClick={() => clickNode(n.index)} data-testid={`agent-node-${n.role}`}>
                <rect width={NODE_W} height={NODE_H} rx={8} />
                <text x={10} y={22} className="role">{p.role || '(no name)'}</text>
                <text x={10} y={42} className="sub">
                  {dynamic?.orchestrator === p.role ? 'orchestrator' : p.withAnswer ? 'answers \\boxed{}' : 'helper'} · {p.maxNewTokens} tok
                </text>
              </g>
            );
          })}
        </svg>
      </div>
      {!dynamic && graph.edges.length > 0 && (
        <ul className="edge-list">
          {graph.edges.map((e, i) => (
            <li key={`${e.from}-${e.to}-${i}`}>
              {e.from} → {e.to}
              <button type="button" className="link" aria-label={`remove edge ${e.from} to ${e.to}`} onClick={() => editDraft((d) => removeEdge(d, i))}>remove</button>
            </li>
          ))}
        </ul>
      )}
      <FieldIssues path="graph.edges" />
      <FieldIssues path="graph.agents" exact />
      <FieldIssues path="graph.dynamic" />
    </section>
  );
}
