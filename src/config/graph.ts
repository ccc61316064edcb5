// The agent graph of a LaMAS: agents (roles with a profile: system prompt, whether it gives the answer,
// sampling settings) and dependency edges {from, to} ("to" sees "from"'s output). Validation reports every
// problem with a code and a path (unique role names, edges between known roles, no cycle — the cycle is
// named —, at least one answering agent, sane sampling settings). compileGraph() gives the acting order
// as topological layers (the agents of one layer act together, each seeing only its ancestors' outputs of
// this turn) and ancestors(role).
//
// Dynamic topology (the AReaL-based MARFT's orchestrator): one role of the graph is the orchestrator; each
// of its turns ends in <call>role</call> (that agent acts next, seeing everything said so far) or <done/>,
// up to maxSteps calls; edges are not used then. parseRoute() reads its output the way the reference does
// (<done/> anywhere wins; otherwise the first <call>).

import { ConfigError, type ConfigErrorCode } from './errors.ts';
import { int, num, validate, type Schema, type SchemaIssue } from './schema.ts';

export interface AgentProfile {
  /** Unique name; also the adapter folder name and the <call> target. */
  role: string;
  systemPrompt: string;
  /** Whether this agent gives the answer (its \boxed{} is scored). */
  withAnswer: boolean;
  maxNewTokens: number;
  /** 0 = greedy. Default 1: PPO's ratio assumes the rollout samples from the policy itself. */
  temperature: number;
  /** 0 = off. */
  topK: number;
  /** 1 = off. */
  topP: number;
  /** One line on what the agent does, for transition turns and the orchestrator's list. */
  description?: string;
}

export interface Edge {
  from: string;
  to: string;
}

export interface DynamicTopology {
  /** The role that routes; it must be one of the graph's agents and not answer. */
  orchestrator: string;
  /** Most agent calls per turn (the reference uses 10). */
  maxSteps: number;
}

export interface AgentGraph {
  agents: AgentProfile[];
  edges: Edge[];
  /** Present for a dynamic topology; edges are then ignored. */
  dynamic?: DynamicTopology | null;
}

export const DEFAULT_SAMPLING = { maxNewTokens: 256, temperature: 1, topK: 0, topP: 1 } as const;

/** A profile with the default sampling settings, overridable. */
export function makeProfile(
  role: string,
  systemPrompt: string,
  options: Partial<Omit<AgentProfile, 'role' | 'systemPrompt'>> = {},
): AgentProfile {
  return { role, systemPrompt, withAnswer: false, ...DEFAULT_SAMPLING, ...options };
}

export interface GraphIssue {
  code: ConfigErrorCode;
  /** Where in the graph, e.g. "agents[1].topP" or "edges[2].to". */
  path: string;
  message: string;
}

export const ROLE_NAME = /^[A-Za-z_][\w-]*$/;

/** A cycle of the edges as a role path [a, b, ..., a], or null. Deterministic: agents in declared order. */
export function findCycle(roles: readonly string[], edges: readonly Edge[]): string[] | null {
  const children = new Map<string, string[]>(roles.map((r) => [r, []]));
  for (const e of edges) children.get(e.from)?.push(e.to);
  const state = new Map<string, 0 | 1 | 2>(); // 0 new, 1 on the stack, 2 done
  const stack: string[] = [];
  const visit = (r: string): string[] | null => {
    state.set(r, 1);
    stack.push(r);
    for (const c of children.get(r) ?? []) {
      if (!children.has(c)) continue;
      const s = state.get(c) ?? 0;
      if (s === 1) return [...stack.slice(stack.indexOf(c)), c];
      if (s === 0) {
        const found = visit(c);
        if (found) return found;
      }
    }
    stack.pop();
    state.set(r, 2);
    return null;
  };
  for (const r of roles) {
    if ((state.get(r) ?? 0) === 0) {
      const found = visit(r);
      if (found) return found;
    }
  }
  return null;
}

/**
 * The profile fields, described once: this validates a profile here (graphIssues) and inside the run config
 * (whose schema embeds it), and documents it in the config's JSON Schema. Missing fields take the defaults.
 */
export const PROFILE_SCHEMA: Schema = {
  type: 'object',
  fields: {
    role: { type: 'string', minLength: 1, description: "The agent's name: unique; it names its adapter folder and <call> target." },
    systemPrompt: { type: 'string', default: '', description: "The agent's instructions (its profile)." },
    withAnswer: { type: 'boolean', default: false, description: 'Its \\boxed{} answer is scored by the environment.' },
    maxNewTokens: int(DEFAULT_SAMPLING.maxNewTokens, 1, 'Tokens the agent may generate per turn at most.'),
    temperature: num(DEFAULT_SAMPLING.temperature, { min: 0, description: 'Sampling temperature; 0 = greedy.' }),
    topK: int(DEFAULT_SAMPLING.topK, 0, 'Sample among the k likeliest tokens; 0 = off.'),
    topP: num(DEFAULT_SAMPLING.topP, {
      min: 0,
      max: 1,
      exclusiveMin: true,
      description: 'Nucleus sampling: the smallest set of tokens with this much probability; 1 = off.',
    }),
    description: {
      type: 'string',
      optional: true,
      description: "One line on what the agent does, for transition turns and the orchestrator's list.",
    },
  },
};

function profileIssues(p: AgentProfile, i: number): GraphIssue[] {
  const issues: SchemaIssue[] = [];
  validate(PROFILE_SCHEMA, p, `agents[${i}]`, issues);
  return issues.map((s) => ({ code: 'GRAPH_PROFILE', ...s }));
}

/** Every problem of the graph (empty when valid). */
export function graphIssues(graph: AgentGraph): GraphIssue[] {
  const issues: GraphIssue[] = [];
  const agents = Array.isArray(graph?.agents) ? graph.agents : [];
  const edges = Array.isArray(graph?.edges) ? graph.edges : [];
  if (agents.length === 0) {
    issues.push({ code: 'GRAPH_EMPTY', path: 'agents', message: 'the graph has no agents' });
    return issues;
  }
  const seen = new Map<string, number>();
  agents.forEach((a, i) => {
    if (typeof a?.role !== 'string' || !ROLE_NAME.test(a.role)) {
      issues.push({
        code: 'GRAPH_ROLE',
        path: `agents[${i}].role`,
        message: `agents[${i}].role must start with a letter or _ and use letters, digits, _ and -; got ${JSON.stringify(a?.role)}`,
      });
      return;
    }
    if (seen.has(a.role)) {
      issues.push({
        code: 'GRAPH_ROLE',
        path: `agents[${i}].role`,
        message: `role "${a.role}" is used twice (agents[${seen.get(a.role)}] and agents[${i}])`,
      });
    } else seen.set(a.role, i);
    issues.push(...profileIssues(a, i));
  });
  const dyn = graph.dynamic ?? null;
  if (!dyn) {
    const edgeSeen = new Set<string>();
    edges.forEach((e, i) => {
      for (const end of ['from', 'to'] as const) {
        if (!seen.has(e?.[end])) {
          issues.push({
            code: 'GRAPH_EDGE',
            path: `edges[${i}].${end}`,
            message: `edges[${i}].${end} names an unknown role ${JSON.stringify(e?.[end])}; roles: ${[...seen.keys()].join(', ')}`,
          });
        }
      }
      const key = `${e?.from}\u0000${e?.to}`;
      if (edgeSeen.has(key)) issues.push({ code: 'GRAPH_EDGE', path: `edges[${i}]`, message: `edge ${e.from} → ${e.to} is given twice` });
      edgeSeen.add(key);
    });
    const cycle = findCycle(
      [...seen.keys()],
      edges.filter((e) => seen.has(e?.from) && seen.has(e?.to)),
    );
    if (cycle) issues.push({ code: 'GRAPH_CYCLE', path: 'edges', message: `the edges form a cycle: ${cycle.join(' → ')}` });
  } else {
    if (typeof dyn.orchestrator !== 'string' || !seen.has(dyn.orchestrator)) {
      issues.push({
        code: 'GRAPH_DYNAMIC',
        path: 'dynamic.orchestrator',
        message: `dynamic.orchestrator must be one of the roles (${[...seen.keys()].join(', ')}), got ${JSON.stringify(dyn.orchestrator)}`,
      });
    } else if (agents[seen.get(dyn.orchestrator)!].withAnswer) {
      issues.push({
        code: 'GRAPH_DYNAMIC',
        path: 'dynamic.orchestrator',
        message: `the orchestrator "${dyn.orchestrator}" must not give the answer (withAnswer false); it only routes`,
      });
    }
    if (!Number.isInteger(dyn.maxSteps) || dyn.maxSteps < 1) {
      issues.push({
        code: 'GRAPH_DYNAMIC',
        path: 'dynamic.maxSteps',
        message: `dynamic.maxSteps must be an integer >= 1, got ${JSON.stringify(dyn.maxSteps)}`,
      });
    }
    if (agents.length < 2)
      issues.push({
        code: 'GRAPH_DYNAMIC',
        path: 'agents',
        message: 'a dynamic topology needs the orchestrator and at least one agent to call',
      });
  }
  if (!agents.some((a) => a?.withAnswer === true)) {
    issues.push({
      code: 'GRAPH_NO_ANSWER',
      path: 'agents',
      message: `no agent gives the answer (withAnswer) among ${agents.map((a) => a?.role).join(', ')}`,
    });
  }
  return issues;
}

/** Throws a ConfigError (code of the first problem) listing every problem of the graph. */
export function validateGraph(graph: AgentGraph): void {
  const issues = graphIssues(graph);
  if (issues.length === 0) return;
  const list = issues.map((i) => i.message).join('\n  ');
  throw new ConfigError(
    issues[0].code,
    issues.length === 1 ? `invalid agent graph: ${list}` : `invalid agent graph (${issues.length} problems):\n  ${list}`,
  );
}

export interface CompiledGraph {
  readonly graph: AgentGraph;
  /** Roles in declared order. */
  readonly roles: readonly string[];
  /** Topological layers: agents of one layer act together. One layer per worker in a dynamic graph. */
  readonly layers: readonly (readonly string[])[];
  /** The acting order: the layers flattened. */
  readonly order: readonly string[];
  /** Roles that give the answer, in acting order. */
  readonly answerers: readonly string[];
  readonly dynamic: DynamicTopology | null;
  profile(role: string): AgentProfile;
  /** Index of the role in graph.agents (its adapter slot in per-agent mode). */
  index(role: string): number;
  /** Direct dependencies, in acting order. */
  parents(role: string): string[];
  /** All transitive dependencies, in acting order: the agents whose outputs this turn `role` sees. */
  ancestors(role: string): string[];
}

/** Validates the graph and precomputes its acting order. */
export function compileGraph(graph: AgentGraph): CompiledGraph {
  validateGraph(graph);
  const roles = graph.agents.map((a) => a.role);
  const byRole = new Map(graph.agents.map((a, i) => [a.role, { profile: a, index: i }]));
  const dynamic = graph.dynamic ?? null;
  const edges = dynamic ? [] : graph.edges;
  const parentsOf = new Map<string, string[]>(roles.map((r) => [r, []]));
  for (const e of edges) parentsOf.get(e.to)!.push(e.from);

  // Longest-path depth: an agent acts one layer after its latest dependency.
  const depth = new Map<string, number>();
  const depthOf = (r: string): number => {
    const known = depth.get(r);
    if (known !== undefined) return known;
    const d = parentsOf.get(r)!.reduce((m, p) => Math.max(m, depthOf(p) + 1), 0);
    depth.set(r, d);
    return d;
  };
  let layers: string[][];
  if (dynamic) {
    layers = [[dynamic.orchestrator], ...roles.filter((r) => r !== dynamic.orchestrator).map((r) => [r])];
  } else {
    layers = [];
    for (const r of roles) (layers[depthOf(r)] ??= []).push(r);
  }
  const order = layers.flat();
  const position = new Map(order.map((r, i) => [r, i]));
  const byOrder = (a: string, b: string) => position.get(a)! - position.get(b)!;

  const ancestorCache = new Map<string, string[]>();
  const ancestors = (role: string): string[] => {
    const known = ancestorCache.get(role);
    if (known) return known.slice();
    const set = new Set<string>();
    const walk = (r: string) => {
      for (const p of parentsOf.get(r)!) if (!set.has(p)) (set.add(p), walk(p));
    };
    walk(role);
    const out = [...set].sort(byOrder);
    ancestorCache.set(role, out);
    return out.slice();
  };
  const get = (role: string) => {
    const e = byRole.get(role);
    if (!e) throw new ConfigError('GRAPH_ROLE', `unknown role "${role}"; roles: ${roles.join(', ')}`);
    return e;
  };
  return {
    graph,
    roles,
    layers,
    order,
    answerers: order.filter((r) => byRole.get(r)!.profile.withAnswer),
    dynamic,
    profile: (role) => get(role).profile,
    index: (role) => get(role).index,
    parents: (role) => (get(role), parentsOf.get(role)!.slice().sort(byOrder)),
    ancestors: (role) => (get(role), ancestors(role)),
  };
}

// ---- Dynamic topology: the orchestrator's routing ----

export type Route = { next: string } | { done: true } | { invalid: string };

const CALL = /<call>\s*([\w-]+)\s*<\/call>/i;
const DONE = /<done\s*\/?>/i;

/**
 * Reads an orchestrator's output: <done/> (or <done>) anywhere ends the turn; otherwise the first
 * <call>role</call> names the next agent. A role is matched exactly, else case-insensitively when that is
 * unambiguous. `roles`: the agents it may call (normally every role but the orchestrator).
 */
export function parseRoute(text: string, roles: readonly string[]): Route {
  if (DONE.test(text)) return { done: true };
  const m = CALL.exec(text);
  if (!m) {
    return /<call>/i.test(text)
      ? { invalid: 'a <call> tag without a valid role name and </call>' }
      : { invalid: 'no <call>role</call> or <done/> in the output' };
  }
  const name = m[1];
  if (roles.includes(name)) return { next: name };
  const folded = roles.filter((r) => r.toLowerCase() === name.toLowerCase());
  if (folded.length === 1) return { next: folded[0] };
  return { invalid: `<call>${name}</call> names no agent it may call (${roles.join(', ')})` };
}

export type RouteDecision = { next: string } | { done: true; reason: 'done' | 'step_limit' | 'invalid'; detail?: string };

/**
 * One routing decision with the step limit applied: `callsSoFar` agents were already called this turn;
 * a call beyond `maxSteps` ends the turn (reason step_limit), and an unreadable output ends it too
 * (reason invalid; the rollout may penalise it).
 */
export function decideRoute(text: string, roles: readonly string[], callsSoFar: number, maxSteps: number): RouteDecision {
  const r = parseRoute(text, roles);
  if ('done' in r) return { done: true, reason: 'done' };
  if ('invalid' in r) return { done: true, reason: 'invalid', detail: r.invalid };
  if (callsSoFar >= maxSteps) return { done: true, reason: 'step_limit', detail: `${maxSteps} calls made` };
  return r;
}
