// marft inspect --config RUN.json --episodes FILE.jsonl [--credit METHOD] [--json]
// The inspector's numbers headless, with no model and no GPU: reads recorded episodes (the public JSONL
// format of src/marft/inspect-jsonl.ts, which the lab's Inspect tab also downloads) and prints, per
// episode, every action's (action level) or every generated token's (token level) credited reward, value,
// delta, advantage and return, as the update uses them before any minibatch normalisation (GRPO: after its
// group normalisation). --json: one JSON line per episode; otherwise a table.

import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { CreditMethod } from '../../marft/credit.ts';
import { type InspectedLine, inspectRecorded, parseRecordedEpisodes } from '../../marft/inspect-jsonl.ts';
import { UsageError, parse, required } from '../args.ts';
import { readRunConfig } from '../platform.ts';

export const usage = 'marft inspect --config RUN.json --episodes FILE.jsonl [--credit equal|step_discount|per_step] [--json]';

const METHODS: readonly CreditMethod[] = ['equal', 'step_discount', 'per_step'];

const num = (x: number | undefined): string => (x === undefined ? '-' : x.toFixed(4));

/** The lines as a table: a row per action (action level) or per generated token (token level). */
export function formatInspectTable(lines: InspectedLine[], level: 'action' | 'token', header: string): string[] {
  const rows = [['episode', 'turn', 'role', 'token', 'reward', 'value', 'delta', 'advantage', 'return']];
  for (const l of lines) {
    for (const a of l.actions) {
      a.advantages.forEach((adv, k) =>
        rows.push([
          l.id,
          String(a.turn),
          a.role,
          level === 'token' ? String(k) : '-',
          num(a.rewards[k]),
          num(a.values?.[k]),
          num(a.deltas?.[k]),
          num(adv),
          num(a.returns?.[k]),
        ]),
      );
    }
  }
  const width = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return [
    header,
    ...rows.map((r) =>
      r
        .map((cell, c) => (c < 4 ? cell.padEnd(width[c]) : cell.padStart(width[c])))
        .join('  ')
        .trimEnd(),
    ),
  ];
}

export async function inspectCommand(argv: string[], print: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Promise<void> {
  const a = parse(argv, {
    config: { type: 'string' },
    episodes: { type: 'string' },
    credit: { type: 'string' },
    json: { type: 'boolean' },
  });
  const config = readRunConfig(required(a.config, 'config'));
  const file = required(a.episodes, 'episodes');
  const method = (a.credit ?? config.credit.method) as CreditMethod;
  if (!METHODS.includes(method)) throw new UsageError(`--credit must be one of ${METHODS.join(', ')}, got "${a.credit}"`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read --episodes ${file}: ${(e as Error).message}`);
  }
  const name = basename(file);
  const lines = inspectRecorded(parseRecordedEpisodes(text, config, name), config, method, name);
  if (a.json) for (const l of lines) print(JSON.stringify(l));
  else {
    const p = config.ppo;
    const how =
      config.algo === 'grpo'
        ? `grpo, group normalised (groupSize ${config.rollout.groupSize}, ${p.groupNorm === 'agent_turn' ? 'per agent and call' : 'pooled tokens'}, std ${p.groupStd})`
        : `ppo, gamma ${p.gamma}, lambda ${p.lambda}`;
    for (const l of formatInspectTable(
      lines,
      config.level,
      `credit ${method}, ${config.level} level, ${how}; ${lines.length} episode${lines.length === 1 ? '' : 's'} from ${name}`,
    ))
      print(l);
  }
}
