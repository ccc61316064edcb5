// The help of a builder field: its description in the run-config schema (one place for the CLI's JSON
// Schema and the lab), and for the credit, level, LoRA, critic and schedule settings a link to the
// paper's term (MARFT, arXiv 2504.16129), as a plain https URL.

import { CONFIG_SCHEMA } from '../../config/run-config.ts';
import { schemaAt } from '../../config/schema.ts';

export const PAPER_URL = 'https://arxiv.org/abs/2504.16129';

/** Config sections and the paper's term for them. */
const PAPER_TERMS: Array<[prefix: string, term: string]> = [
  ['credit', 'credit assignment'],
  ['level', 'action-level and token-level MARFT (MARFT-A, MARFT-T)'],
  ['lora', 'LoRA fine-tuning of each agent'],
  ['critic', 'the critic (centralised value function, CTDE)'],
  ['schedule', 'agent-by-agent training and critic warm-up'],
  ['ppo.gamma', 'GAE over agents and turns'],
  ['ppo.lambda', 'GAE over agents and turns'],
];

export interface FieldHelp {
  text: string;
  paper: { term: string; url: string } | null;
}

/** The help of the field at `path` ("ppo.clip", "graph.agents[1].topP"); null for a path outside the schema. */
export function fieldHelp(path: string): FieldHelp | null {
  const text = schemaAt(CONFIG_SCHEMA, path)?.description;
  if (!text) return null;
  const term = PAPER_TERMS.find(([prefix]) => path === prefix || path.startsWith(`${prefix}.`))?.[1];
  return { text, paper: term ? { term, url: PAPER_URL } : null };
}
