// Preset teams, after the MARFT examples: 1 agent (solver), 2 (planner -> solver), 3 (planner -> solver
// -> verifier), 4 (planner -> solver -> reflector -> verifier), each a chain where every agent sees all
// earlier agents' outputs, plus an orchestrated team (dynamic topology). Every preset has an anonymous
// variant — agent_1..agent_N with generic prompts, the same edges and the same answering positions — as
// the ablation baseline: it isolates what the role prompts add over "more agents".
// Prompts follow the original codebase's division of labour: the planner (its "reasoner") plans and
// computes nothing; the solver (its "actor") executes the plan and answers in \boxed{}; the verifier
// checks, and confirms or corrects the boxed answer.

import { makeProfile, type AgentGraph, type AgentProfile, type Edge } from './graph.ts';

const BOXED = 'Put the final answer in \\boxed{}.';

export const ROLE_PROMPTS = {
  planner:
    'You are the planner of a team solving a math problem. Read the problem and write a short numbered plan of the steps needed to solve it. Do not carry out any calculation and do not give the answer: another agent will execute your plan.',
  solver: `You are the solver of a team solving a math problem. Follow the plan given by your teammates if there is one, carry out each step of the calculation carefully, and state the result. ${BOXED}`,
  soloSolver: `You are a careful math solver. Solve the problem step by step. ${BOXED}`,
  reflector:
    "You are the reflector of a team solving a math problem. Review the solver's work step by step, point out any mistake in reasoning or arithmetic and say how to fix it. Do not write a final answer yourself.",
  verifier: `You are the verifier of a team solving a math problem. Check the solution (and any review of it) against the problem. If it is right, restate its final answer; if it is wrong, correct it. ${BOXED}`,
} as const;

const DESCRIPTIONS: Record<string, string> = {
  planner: 'Writes a step-by-step plan without computing.',
  solver: 'Executes the plan and gives the answer in \\boxed{}.',
  reflector: 'Reviews the solution and points out mistakes.',
  verifier: 'Checks the solution and gives the final answer in \\boxed{}.',
};

export type PresetName = 'solo' | 'duo' | 'trio' | 'quartet' | 'orchestrated';
export const PRESET_NAMES: readonly PresetName[] = ['solo', 'duo', 'trio', 'quartet', 'orchestrated'];

const CHAINS: Record<Exclude<PresetName, 'orchestrated'>, string[]> = {
  solo: ['solver'],
  duo: ['planner', 'solver'],
  trio: ['planner', 'solver', 'verifier'],
  quartet: ['planner', 'solver', 'reflector', 'verifier'],
};

const ANSWERS: ReadonlySet<string> = new Set(['solver', 'verifier']);

/** Every earlier agent feeds every later one (a chain with all shortcut edges, as the original's sequential prompts). */
function chainEdges(roles: string[]): Edge[] {
  const edges: Edge[] = [];
  for (let j = 1; j < roles.length; j++) for (let i = 0; i < j; i++) edges.push({ from: roles[i], to: roles[j] });
  return edges;
}

function namedProfile(role: string, n: number): AgentProfile {
  const prompt = role === 'solver' && n === 1 ? ROLE_PROMPTS.soloSolver : ROLE_PROMPTS[role as keyof typeof ROLE_PROMPTS];
  return makeProfile(role, prompt, { withAnswer: ANSWERS.has(role), description: DESCRIPTIONS[role] });
}

/** A generic prompt that tells the agent its position, not a role. */
export function anonymousPrompt(i: number, n: number, withAnswer: boolean): string {
  const team =
    n === 1
      ? 'You are agent_1, solving a math problem.'
      : `You are agent_${i + 1} of a team of ${n} agents solving a math problem together.`;
  const read = i === 0 ? 'Read the problem' : "Read the problem and your teammates' messages";
  return `${team} ${read}, then write your contribution.${withAnswer ? ` ${BOXED}` : ''}`;
}

/** The orchestrator's default system prompt: the agents it may call and the <call>/<done/> protocol. */
export function orchestratorPrompt(agents: readonly AgentProfile[]): string {
  const list = agents.map((a) => `- ${a.role}: ${a.description ?? 'Specialist agent.'}`).join('\n');
  return [
    "You are an orchestrator coordinating a team of specialist agents to solve the user's task. Decide which agent should work next based on the conversation so far.",
    '',
    `Available agents:\n${list}`,
    '',
    'Instructions:',
    '- To delegate to an agent, write brief reasoning then: <call>agent_name</call>',
    '- When the task is fully complete, write: <done/>',
    '- You may call agents in any order and repeat calls if needed.',
    '- Keep your reasoning concise.',
  ].join('\n');
}

/** The preset team `name`; `anonymous` gives the agent_1..N ablation with generic prompts. */
export function presetGraph(name: PresetName, options: { anonymous?: boolean } = {}): AgentGraph {
  if (name === 'orchestrated') {
    const workers = CHAINS.trio.map((r, i) => (options.anonymous ? anonymousProfile(r, i + 1, 4) : namedProfile(r, 3)));
    const orchestratorRole = options.anonymous ? 'agent_1' : 'orchestrator';
    const orchestrator = makeProfile(orchestratorRole, orchestratorPrompt(workers), { description: 'Routes the task between the agents.' });
    return { agents: [orchestrator, ...workers], edges: [], dynamic: { orchestrator: orchestratorRole, maxSteps: 10 } };
  }
  const roles = CHAINS[name];
  if (!roles) throw new Error(`unknown preset "${name}"; presets: ${PRESET_NAMES.join(', ')}`);
  const agents = roles.map((r, i) => (options.anonymous ? anonymousProfile(r, i, roles.length) : namedProfile(r, roles.length)));
  return { agents, edges: chainEdges(agents.map((a) => a.role)) };
}

/** agent_{slot+1} with a generic prompt, answering where the named role answers. */
function anonymousProfile(namedRole: string, slot: number, n: number): AgentProfile {
  const withAnswer = ANSWERS.has(namedRole);
  return makeProfile(`agent_${slot + 1}`, anonymousPrompt(slot, n, withAnswer), { withAnswer, description: `Team member ${slot + 1}.` });
}

/** The preset with `n` agents (1..4). */
export function presetForAgents(n: 1 | 2 | 3 | 4, options: { anonymous?: boolean } = {}): AgentGraph {
  return presetGraph((['solo', 'duo', 'trio', 'quartet'] as const)[n - 1], options);
}
