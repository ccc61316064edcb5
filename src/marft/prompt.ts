// An agent's observation, as the prompt its LLM continues. The parts, in order: its system prompt, the
// task, the earlier turns of a multi-turn episode (every agent's output as "role: text" and the
// environment's feedback, e.g. "judge: the answer is incorrect"), the outputs its ancestors produced this
// turn as "role: text", and its own role header. Two renderings:
// - chat messages {role: system|user|assistant, content} for a chat template: other agents' outputs and
//   feedback are user turns, the agent's own earlier outputs are assistant turns, consecutive user turns
//   are merged (strict templates demand alternation), and the header is the AReaL-style transition
//   "Now it is {role}'s turn. {description}" closing the last user turn;
// - plain text for a model without a chat template, as the original MARFT prompts read: blocks separated
//   by blank lines, ending in "{role}:" for the model to continue.

import type { AgentProfile } from '../config/graph.ts';

export type ChatRole = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

export interface AgentOutput {
  role: string;
  text: string;
}

/** One finished turn of the episode: what every agent said, then the environment's feedback. */
export interface PastTurn {
  outputs: AgentOutput[];
  feedback: string;
}

export interface ObservationParts {
  profile: Pick<AgentProfile, 'role' | 'systemPrompt' | 'description'>;
  task: string;
  /** Outputs of the agent's ancestors this turn, in acting order (compileGraph().ancestors). */
  visible: AgentOutput[];
  /** Earlier turns of this episode, oldest first. */
  history?: PastTurn[];
}

/** The AReaL-style transition turn: "Now it is {role}'s turn. {description}". */
export function transitionText(role: string, description?: string): string {
  return `Now it is ${role}'s turn.${description ? ` ${description}` : ''}`;
}

export const formatOutput = (o: AgentOutput): string => `${o.role}: ${o.text.trim()}`;

export interface ChatOptions {
  /** Render the agent's own earlier outputs as assistant turns (default true); else as "role: text" user turns. */
  ownTurnsAsAssistant?: boolean;
  /** Close with the transition turn (default true). */
  transition?: boolean;
}

/** The observation as chat messages (system first; the last message is a user turn). */
export function buildMessages(parts: ObservationParts, options: ChatOptions = {}): ChatMessage[] {
  const own = options.ownTurnsAsAssistant ?? true;
  const me = parts.profile.role;
  const raw: ChatMessage[] = [];
  if (parts.profile.systemPrompt) raw.push({ role: 'system', content: parts.profile.systemPrompt });
  raw.push({ role: 'user', content: parts.task });
  for (const turn of parts.history ?? []) {
    for (const o of turn.outputs) {
      raw.push(own && o.role === me ? { role: 'assistant', content: o.text.trim() } : { role: 'user', content: formatOutput(o) });
    }
    if (turn.feedback) raw.push({ role: 'user', content: turn.feedback });
  }
  for (const o of parts.visible) raw.push({ role: 'user', content: formatOutput(o) });
  if (options.transition ?? true) raw.push({ role: 'user', content: transitionText(me, parts.profile.description) });
  return mergeConsecutive(raw);
}

/** Joins consecutive messages of the same chat role with a blank line. */
export function mergeConsecutive(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const m of messages) {
    const last = out[out.length - 1];
    if (last && last.role === m.role && m.role !== 'system') last.content = `${last.content}\n\n${m.content}`;
    else out.push({ ...m });
  }
  return out;
}

/** The observation as plain text, ending in the role header "{role}:" (no trailing space). */
export function buildPlainPrompt(parts: ObservationParts): string {
  const blocks: string[] = [];
  if (parts.profile.systemPrompt) blocks.push(parts.profile.systemPrompt);
  blocks.push(`Problem: ${parts.task}`);
  for (const turn of parts.history ?? []) {
    for (const o of turn.outputs) blocks.push(formatOutput(o));
    if (turn.feedback) blocks.push(turn.feedback);
  }
  for (const o of parts.visible) blocks.push(formatOutput(o));
  blocks.push(`${parts.profile.role}:`);
  return blocks.join('\n\n');
}
