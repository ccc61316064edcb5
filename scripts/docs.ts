// `npm run docs`: publishes what the last `npm test` produced into the committed docs: the reliability
// table (reliability/RELIABILITY.md -> RELIABILITY.md) and the lab's screenshot after a short run
// (test-screens/live.png -> docs/screenshot.png) and the Pause feedback (test-screens/feedback-pausing.png). Tests themselves write only to ignored folders.
import { copyFileSync, existsSync } from 'node:fs';

const copies: Array<[string, string]> = [
  ['reliability/RELIABILITY.md', 'RELIABILITY.md'],
  ['test-screens/live.png', 'docs/screenshot.png'],
  ['test-screens/feedback-pausing.png', 'docs/feedback-pausing.png'],
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
