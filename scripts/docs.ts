// `npm run docs`: publishes what the last `npm test` produced into the committed docs: the reliability
// table (reliability/RELIABILITY.md -> RELIABILITY.md) and the lab's screenshot after a short run
// (test-screens/live.png -> docs/screenshot.png), the Hub download panel (e2e/hub.spec.ts), the credit sandbox
// (test-screens/credit-sandbox-classroom.png -> docs/credit-sandbox.png), the chart and graph of e2e/a11y.spec.ts
// the Pause feedback (e2e/feedback.spec.ts), the demo run's curves (e2e/demo.spec.ts) and Try the team (e2e/try-team.spec.ts). Tests themselves write only to ignored folders.
import { copyFileSync, existsSync } from 'node:fs';

const copies: Array<[string, string]> = [
  ['reliability/RELIABILITY.md', 'RELIABILITY.md'],
  ['test-screens/live.png', 'docs/screenshot.png'],
  ['test-screens/hub.png', 'docs/hub.png'],
  ['test-screens/credit-sandbox-classroom.png', 'docs/credit-sandbox.png'],
  ['test-screens/chart-overlay.png', 'docs/chart-overlay.png'],
  ['test-screens/graph-editor.png', 'docs/graph-editor.png'],
  ['test-screens/feedback-pausing.png', 'docs/feedback-pausing.png'],
  ['test-screens/demo-train.png', 'docs/demo-train.png'],
  ['test-screens/try-team.png', 'docs/try-team.png'],
];
const missing = copies.filter(([from]) => !existsSync(from)).map(([from]) => from);
if (missing.length) {
  console.error(`npm run docs: ${missing.join(', ')} not found; run \`npm test\` first (it writes them).`);
  process.exit(1);
}
for (const [from, to] of copies) {
  copyFileSync(from, to);
  console.log(`${from} -> ${to}`);
}
