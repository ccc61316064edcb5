// The agent graph on React Flow: agents laid out by dependency depth (layout.ts), edges as arrows ("to"
// sees "from"); drag, zoom, fit view, and keyboard operation (Tab to a node or edge, Enter selects, Delete
// removes a selected edge, the "connect" form adds one). Every edit goes through graph-ops.ts on the
// builder's draft (editDraft: undo/redo and the agent ids stay in the store); dragged positions are only
// the view's. Validation messages of the graph show under it.

import { useEffect, useMemo, useState } from 'react';
import {
  Background,
  BaseEdge,
  type Connection,
  Controls,
  type Edge,
  type EdgeChange,
  type EdgeProps,
  type FitViewOptions,
  Handle,
  MarkerType,
  type Node,
  type NodeChange,
  type NodeProps,
  Position,
  ReactFlow,
  getBezierPath,
  useReactFlow,
  useStore,
} from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import { useShallow } from 'zustand/react/shallow';
import { editDraft, freshAgentIds, selectAgentIds, selectConnectFrom, selectDraft, selectSelectedAgent, useLab } from '../store.ts';
import { FieldIssues } from './fields.tsx';
import { addAgent, addEdge, removeEdge } from './graph-ops.ts';
import { NODE_H, NODE_W, arcPath, edgeKind, layoutGraph } from './layout.ts';

const selectGraphIssueRoles = (s: ReturnType<typeof useLab.getState>): number[] =>
  s.issues
    .map((i) => /^graph\.agents\[(\d+)\]/.exec(i.path))
    .filter((m): m is RegExpExecArray => !!m)
    .map((m) => Number(m[1]));

interface AgentData extends Record<string, unknown> {
  role: string;
  sub: string;
  bad: boolean;
  target: boolean;
}
interface ArcData extends Record<string, unknown> {
  dir: -1 | 1;
  span: number;
}

const hidden = { opacity: 0, pointerEvents: 'none' } as const;

function AgentNode({ data, selected }: NodeProps<Node<AgentData>>) {
  return (
    <div
      className={['agent-node', selected ? 'selected' : '', data.bad ? 'bad' : '', data.target ? 'target' : ''].join(' ')}
      data-testid={`agent-node-${data.role}`}
      style={{ width: NODE_W, height: NODE_H }}
    >
      <Handle type="target" position={Position.Left} id="in" />
      <Handle type="source" position={Position.Right} id="out" />
      <Handle type="target" position={Position.Top} id="top-in" style={hidden} isConnectable={false} />
      <Handle type="source" position={Position.Top} id="top-out" style={hidden} isConnectable={false} />
      <Handle type="target" position={Position.Bottom} id="bottom-in" style={hidden} isConnectable={false} />
      <Handle type="source" position={Position.Bottom} id="bottom-out" style={hidden} isConnectable={false} />
      <div className="role">{data.role || '(no name)'}</div>
      <div className="sub">{data.sub}</div>
    </div>
  );
}

function ArcEdge({ sourceX, sourceY, targetX, targetY, data, markerEnd, style }: EdgeProps<Edge<ArcData>>) {
  return <BaseEdge path={arcPath(sourceX, sourceY, targetX, targetY, data!.dir, data!.span)} markerEnd={markerEnd} style={style} />;
}

function NextEdge({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, markerEnd, style }: EdgeProps) {
  const [path] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition });
  return <BaseEdge path={path} markerEnd={markerEnd} style={style} />;
}

const nodeTypes = { agent: AgentNode };

// The view fits the agents with room for the arcs above and below the rows, and a left margin wider than the
// zoom controls (bottom left), so no agent sits under them; never zoomed in past 1.25.
const FIT: FitViewOptions = { padding: { top: '14%', bottom: '14%', left: '64px', right: '24px' }, maxZoom: 1.25 };

/**
 * Fits the view whenever the graph's agents or edges change (a preset, an import, an added agent or edge:
 * any of them can move agents off the canvas), and when the editor becomes visible again (a graph changed
 * while another tab was shown was fitted to no size). React Flow holds the fit until new nodes are measured.
 */
function FitOnChange({ signature }: { signature: string }) {
  const { fitView } = useReactFlow();
  const visible = useStore((st) => st.width > 0 && st.height > 0);
  useEffect(() => {
    if (visible) void fitView(FIT);
  }, [signature, visible, fitView]);
  return null;
}
const edgeTypes = { arc: ArcEdge, next: NextEdge };

/** The keyboard way to connect two agents (dragging a handle needs a pointer). */
function ConnectForm({ roles }: { roles: string[] }) {
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const ok = roles.includes(from) && roles.includes(to) && from !== to;
  return (
    <form
      className="row connect-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (ok)
          editDraft((d) => {
            addEdge(d, from, to);
          });
      }}
    >
      <label>
        from{' '}
        <select value={from} onChange={(e) => setFrom(e.target.value)} data-testid="connect-from">
          <option value="">agent…</option>
          {roles.map((r) => (
            <option key={r}>{r}</option>
          ))}
        </select>
      </label>
      <label>
        sees it:{' '}
        <select value={to} onChange={(e) => setTo(e.target.value)} data-testid="connect-to">
          <option value="">agent…</option>
          {roles.map((r) => (
            <option key={r}>{r}</option>
          ))}
        </select>
      </label>
      <button type="submit" disabled={!ok} data-testid="connect-submit">
        Add edge
      </button>
    </form>
  );
}

export function GraphEditor() {
  const draft = useLab(selectDraft);
  const selected = useLab(selectSelectedAgent);
  const connectFrom = useLab(selectConnectFrom);
  const ids = useLab(selectAgentIds);
  const badAgents = useLab(useShallow(selectGraphIssueRoles));
  const [moved, setMoved] = useState<Record<string, { x: number; y: number }>>({});
  const [selectedEdges, setSelectedEdges] = useState<string[]>([]);
  const graph = draft.graph;
  const dynamic = graph.dynamic ?? null;
  const layout = useMemo(() => layoutGraph(graph), [graph]);
  const layers = new Map(layout.nodes.map((n) => [n.role, n.layer]));
  const idOf = (i: number) => ids[i] ?? `agent-index-${i}`;

  const nodes: Node<AgentData>[] = layout.nodes.map((n) => {
    const p = graph.agents[n.index];
    return {
      id: idOf(n.index),
      type: 'agent',
      position: moved[idOf(n.index)] ?? { x: n.x, y: n.y },
      selected: n.index === selected,
      deletable: false,
      ariaLabel: `agent ${p.role || '(no name)'}`,
      data: {
        role: p.role,
        bad: badAgents.includes(n.index),
        target: !!connectFrom && connectFrom !== p.role,
        sub: `${dynamic?.orchestrator === p.role ? 'orchestrator' : p.withAnswer ? 'answers \\boxed{}' : 'helper'} · ${p.maxNewTokens} tok`,
      },
    };
  });
  const nodeId = new Map(graph.agents.map((a, i) => [a.role, idOf(i)]));
  const edges: Edge[] = dynamic
    ? []
    : graph.edges.flatMap((e, i) => {
        const source = nodeId.get(e.from),
          target = nodeId.get(e.to);
        if (!source || !target) return [];
        const { kind, span } = edgeKind(layers, e.from, e.to);
        const handles = kind === 'next' ? ['out', 'in'] : kind === 'skip' ? ['top-out', 'top-in'] : ['bottom-out', 'bottom-in'];
        return [
          {
            id: String(i),
            source,
            target,
            sourceHandle: handles[0],
            targetHandle: handles[1],
            type: kind === 'next' ? 'next' : 'arc',
            data: { dir: kind === 'back' ? 1 : -1, span },
            selected: selectedEdges.includes(String(i)),
            markerEnd: { type: MarkerType.ArrowClosed, width: 18, height: 18, color: '#7a8394' },
            ariaLabel: `edge ${e.from} to ${e.to} (Delete removes it)`,
            className: 'graph-edge',
          },
        ];
      });
  const roleOfId = (id: string) => graph.agents[ids.indexOf(id)]?.role;

  const onNodesChange = (changes: NodeChange<Node<AgentData>>[]) => {
    for (const c of changes) {
      if (c.type === 'position' && c.position) {
        const p = c.position;
        setMoved((m) => ({ ...m, [c.id]: p }));
      }
      if (c.type === 'select' && c.selected) {
        const i = ids.indexOf(c.id);
        if (i >= 0) useLab.setState({ selectedAgent: i });
      }
    }
  };
  const onEdgesChange = (changes: EdgeChange[]) => {
    const removed = changes
      .filter((c) => c.type === 'remove')
      .map((c) => Number(c.id))
      .sort((a, b) => b - a);
    if (removed.length) {
      editDraft((d) => {
        for (const i of removed) removeEdge(d, i);
      });
      setSelectedEdges([]);
    }
    const sel = changes.filter((c) => c.type === 'select');
    if (sel.length)
      setSelectedEdges((s) => [
        ...s.filter((id) => !sel.some((c) => c.id === id)),
        ...sel.flatMap((c) => (c.type === 'select' && c.selected ? [c.id] : [])),
      ]);
  };
  const onConnect = (c: Connection) => {
    const from = roleOfId(c.source),
      to = roleOfId(c.target);
    if (from && to && from !== to)
      editDraft((d) => {
        addEdge(d, from, to);
      });
  };
  const clickNode = (id: string) => {
    const i = ids.indexOf(id);
    const role = graph.agents[i]?.role;
    if (role === undefined) return;
    if (connectFrom && connectFrom !== role) {
      editDraft((d) => {
        addEdge(d, connectFrom, role);
      });
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
          <button
            type="button"
            data-testid="add-agent"
            onClick={() => {
              let i = 0;
              editDraft((d, agentIds) => {
                i = addAgent(d);
                agentIds.push(...freshAgentIds(1));
              });
              useLab.setState({ selectedAgent: i });
            }}
          >
            + Add agent
          </button>
          {!dynamic && (
            <button
              type="button"
              data-testid="connect-agent"
              className={connectFrom ? 'active' : ''}
              disabled={graph.agents.length < 2}
              onClick={() => useLab.setState({ connectFrom: connectFrom ? null : (graph.agents[selected]?.role ?? null) })}
            >
              {connectFrom ? `Click the agent that sees ${connectFrom}… (cancel)` : 'Connect from selected'}
            </button>
          )}
        </div>
      </div>
      {dynamic && (
        <p className="hint">
          Dynamic topology: {dynamic.orchestrator} routes the task with &lt;call&gt;role&lt;/call&gt; (up to {dynamic.maxSteps} calls);
          edges are not used.
        </p>
      )}
      <div
        className="graph-flow"
        data-testid="graph-editor"
        role="group"
        aria-label="agent graph: Tab to an agent or edge, Enter selects, Delete removes the selected edge"
        data-edges={edges.length}
      >
        <ReactFlow
          nodes={nodes}
          edges={edges}
          nodeTypes={nodeTypes}
          edgeTypes={edgeTypes}
          onNodesChange={onNodesChange}
          onEdgesChange={onEdgesChange}
          onConnect={onConnect}
          onNodeClick={(_e, n) => clickNode(n.id)}
          fitView
          fitViewOptions={FIT}
          minZoom={0.3}
          maxZoom={2}
          deleteKeyCode={['Delete', 'Backspace']}
          proOptions={{ hideAttribution: true }}
          nodesFocusable
          edgesFocusable
        >
          <Background gap={16} size={1} />
          <Controls showInteractive={false} fitViewOptions={FIT} />
          <FitOnChange signature={`${ids.join()}|${graph.edges.map((e) => `${e.from}>${e.to}`).join()}|${dynamic?.orchestrator ?? ''}`} />
        </ReactFlow>
      </div>
      {!dynamic && <ConnectForm roles={graph.agents.map((a) => a.role).filter(Boolean)} />}
      {!dynamic && graph.edges.length > 0 && (
        <ul className="edge-list">
          {graph.edges.map((e, i) => (
            <li key={`${e.from}-${e.to}-${i}`}>
              {e.from} → {e.to}
              <button
                type="button"
                className="link"
                aria-label={`remove edge ${e.from} to ${e.to}`}
                onClick={() => editDraft((d) => removeEdge(d, i))}
              >
                remove
              </button>
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
