// Writes configs/matrix/<row>.json, the learning matrix's run configs, from bench/matrix-rows.ts (the one
// source of the rows; src/config/matrix-configs.test.ts checks the files match it and validate).
// Run: npx tsx bench/matrix-configs.ts
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { MATRIX_ROWS, matrixConfig } from './matrix-rows.ts';

mkdirSync('configs/matrix', { recursive: true });
for (const f of readdirSync('configs/matrix')) if (f.endsWith('.json')) rmSync(`configs/matrix/${f}`);
for (const row of MATRIX_ROWS) {
  writeFileSync(`configs/matrix/${row.name}.json`, `${JSON.stringify(matrixConfig(row), null, 2)}\n`);
  console.log(`configs/matrix/${row.name}.json`);
}
