// `npm run bench:matrix-report`: the learning matrix's results (bench/results/matrix/, every seed's folders,
// read by bench/matrix-results.ts) as docs/MATRIX.md (one table per family, the numbers from
// bench/matrix-table.ts) and one plot per family, docs/matrix-<family>.svg: team reward (every seed: seed 1
// solid, seed 2 dashed) and per-agent reward (seed 1; agents in acting order solid, dashed, dotted, dash-dot)
// against generated tokens, a moving mean over 5 iterations, the family's rows beside the rows they are
// compared with (grey). Options: --dir bench/results/matrix --md docs/MATRIX.md --svg-dir docs

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MATRIX_ROWS, type MatrixRow, baseKey, matrixConfig, rowByName } from './matrix-rows.ts';
import { type MatrixResults, readResults } from './matrix-results.ts';
import { markdownTable, tableRow } from './matrix-table.ts';
import { H, W, type Series, panel } from './svg-panel.ts';

const arg = (n: string, d: string): string => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};
const dir = arg('dir', 'bench/results/matrix');
const results = readResults(dir);
const planned = (r: MatrixRow): number => matrixConfig(r).iterations as number;
const families = [...new Set(MATRIX_ROWS.map((r) => r.family))];
const seedsRead = [...new Set([...results.runs.values()].flatMap((s) => s.map((x) => x.seed)))].sort();

const COLORS = ['#1b9e77', '#d95f02', '#7570b3', '#e7298a', '#66a61e', '#e6ab02', '#a6761d'];
const GREY = '#999999';
const SEED_DASH = ['', '6 3', '2 2'];
const AGENT_DASH = ['', '6 3', '2 2', '8 3 2 3'];
const smooth = (xs: number[], w = 5): number[] =>
  xs.map((_, i) => {
    const s = xs.slice(Math.max(0, i - w + 1), i + 1);
    return s.reduce((a, b) => a + b, 0) / s.length;
  });
const cumulative = (xs: number[]): number[] => {
  let t = 0;
  return xs.map((x) => (t += x));
};

/** The two panels of a family: its rows in colour, the rows they are compared with in grey. */
function familySvg(family: string, r: MatrixResults): string | null {
  const own = MATRIX_ROWS.filter((x) => x.family === family && r.runs.has(x.name));
  if (!own.length) return null;
  const refs = [
    ...new Set(own.map((x) => x.reference).filter((n): n is string => !!n && r.runs.has(n) && rowByName(n)!.family !== family)),
  ];
  const rows = [...refs.map((n) => ({ name: n, color: GREY })), ...own.map((x, i) => ({ name: x.name, color: COLORS[i % COLORS.length] }))];
  const team: Series[] = [],
    agents: Series[] = [];
  for (const { name, color } of rows) {
    r.runs.get(name)!.forEach((s, k) => {
      const at = cumulative(s.log.map((l) => Object.values(l.agents).reduce((a, b) => a + b.tokens, 0)));
      team.push({
        values: smooth(s.log.map((l) => l.teamReward)),
        at,
        color,
        dash: SEED_DASH[k % SEED_DASH.length],
        label: k === 0 ? name : '',
      });
      if (k > 0) return;
      // agents that never acted (an orchestrator's callees it never called) have no curve
      const roles = Object.keys(s.log[0]?.agents ?? {}).filter((role) => s.log.some((l) => l.agents[role]?.tokens > 0));
      roles.forEach((role, j) =>
        agents.push({
          values: smooth(s.log.map((l) => l.agents[role]?.reward ?? 0)),
          at,
          color,
          dash: AGENT_DASH[j % AGENT_DASH.length],
          label: j === 0 ? `${name}: ${roles.join(', ')}` : '',
        }),
      );
    });
  }
  const upTo = `${(Math.max(...team.map((t) => t.at!.at(-1)!)) / 1000).toFixed(0)} k`;
  const seeds = seedsRead.length > 1 ? `seeds ${seedsRead.join(', ')} (solid, dashed)` : `seed ${seedsRead[0]}`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${2 * H}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
${panel(0, `${family}: team reward against generated tokens (0 to ${upTo}), ${seeds}, mean of 5 iterations`, team, (v) => v.toFixed(2), { legendPerRow: 3, legendStep: 210 })}
${panel(H, `${family}: per-agent reward, seed ${seedsRead[0]}, agents in acting order solid, dashed, dotted, dash-dot`, agents, (v) => v.toFixed(2), { legendPerRow: 2, legendStep: 320 })}
</svg>
`;
}

const svgDir = arg('svg-dir', 'docs');
const plotted = families.filter((f) => {
  const svg = familySvg(f, results);
  if (svg) writeFileSync(join(svgDir, `matrix-${f}.svg`), svg);
  return !!svg;
});

const sections = families.flatMap((f) => {
  const rows = MATRIX_ROWS.filter((r) => r.family === f).flatMap(
    (r) => tableRow(r, results.runs, results.bases.get(baseKey(matrixConfig(r))) ?? {}, planned(r)) ?? [],
  );
  if (!rows.length) return [];
  const notes = rows.filter((t) => t.row.note).map((t) => `- \`${t.row.name}\`: ${t.row.note}.`);
  const against = rows.filter((t) => t.row.reference).map((t) => `\`${t.row.name}\` against \`${t.row.reference}\``);
  return [
    `## ${f}`,
    '',
    ...rows.map((t) => `- \`${t.row.name}\`: ${t.row.what}.`),
    ...(against.length ? [`- Compared: ${against.join(', ')}.`] : []),
    '',
    markdownTable(rows),
    '',
    ...(notes.length ? ['What the task can show:', '', ...notes, ''] : []),
    ...(plotted.includes(f) ? [`![${f}: team and per-agent reward against generated tokens](matrix-${f}.svg)`, ''] : []),
  ];
});
const missing = MATRIX_ROWS.filter((r) => !results.runs.has(r.name)).map((r) => `\`${r.name}\``);
const md = [
  '# The learning matrix',
  '',
  `Every MARFT setting of the lab trained from the untuned built-in model (marft-tiny) on the built-in task (\`coop-arith\`), one row per setting: \`configs/matrix/<row>.json\`, generated from \`bench/matrix-rows.ts\`, trained and evaluated by \`bench/matrix.sh\` on one GPU (many rows at once), and summarised here by \`npm run bench:matrix-report\` from \`${dir}/\` (folders ${results.folders.map((f) => `\`${f}\``).join(', ')}). Generated: edit the rows or the report, not this text. Seeds read: ${seedsRead.join(', ')}.`,
  '',
  'Columns: per seed (joined by " / " in seed order) the iterations trained, the generated tokens and the iterations\' own seconds (rows shared the GPU many at a time); held-out accuracy on 1024 test episodes, greedy and sampled (T = 1), of the untuned base (one evaluation per team) → after training; the mean over seeds with its standard error (with one seed, the binomial s.e. of 1024 episodes, which leaves out the run-to-run spread; with more, the larger of the seeds\' spread and the binomial s.e.). The reading compares the row with its base and with the row it changes one setting of: a difference within 2 standard errors says "no difference" (± is 2 s.e., in points). Rows train about the same generated tokens, so the comparison is at comparable cost, not at equal iterations. Any row\'s curves go on the lab\'s Train charts: Runs, "Overlay a training log", with its `<row>-s<seed>.jsonl` or its kept `state.json`.',
  '',
  ...sections,
  ...(missing.length ? [`Rows without results yet: ${missing.join(', ')}.`, ''] : []),
  "Seed 1's evaluations of the first run on the GPU machine did not come back as files; `seed1-batch1/transcribed.eval.jsonl` holds them as that run printed them (0.1 % rounding), with its untuned bases.",
  '',
].join('\n');
writeFileSync(arg('md', 'docs/MATRIX.md'), md);
console.log(`docs: ${arg('md', 'docs/MATRIX.md')}, ${plotted.length} plots; seeds ${seedsRead.join(', ')}; ${results.runs.size} rows`);
