// The help of a builder field: its description in the run-config schema (one place for the CLI's JSON
// Schema and the lab), and where the schema names the paper's term for a field or its section (credit, level,
// LoRA, critic, schedule, GAE) a link to the paper (MARFT, arXiv 2504.16129), as a plain https URL.

import { CONFIG_SCHEMA } from '../../config/run-config-schema.ts';
import { paperAt, schemaAt } from '../../config/schema.ts';

export const PAPER_URL = 'https://arxiv.org/abs/2504.16129';

export interface FieldHelp {
  text: string;
  paper: { term: string; url: string } | null;
}

/** The help of the field at `path` ("ppo.clip", "graph.agents[1].topP"); null for a path outside the schema. */
export function fieldHelp(path: string): FieldHelp | null {
  const text = schemaAt(CONFIG_SCHEMA, path)?.description;
  if (!text) return null;
  const term = paperAt(CONFIG_SCHEMA, path);
  return { text, paper: term ? { term, url: PAPER_URL } : null };
}
