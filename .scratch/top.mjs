import fs from 'node:fs';
const f = fs.readdirSync('.').find((x) => x.endsWith('.cpuprofile'));
const p = JSON.parse(fs.readFileSync(f));
const self = new Map(); const byId = new Map(p.nodes.map((n) => [n.id, n]));
const dt = p.timeDeltas; const counts = new Map();
p.samples.forEach((id, i) => counts.set(id, (counts.get(id) ?? 0) + (dt[i] ?? 0)));
for (const n of p.nodes) { const k = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber}`; self.set(k, (self.get(k) ?? 0) + (counts.get(n.id) ?? 0)); }
const tot = [...self.values()].reduce((a, b) => a + b, 0);
[...self].sort((a, b) => b[1] - a[1]).slice(0, 40).forEach(([k, v]) => console.log((v / 1000).toFixed(0).padStart(7), (100 * v / tot).toFixed(1).padStart(5), k));
