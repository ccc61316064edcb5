// Fuzzes checkpoint imports: a checkpoint folder zipped (zipFiles) then mutated byte-wise, truncated or
// replaced by garbage, read through importCheckpointZip + readCheckpointFiles (every size and SHA-256
// verified); state.json mutated structurally and re-signed (its own checksum made valid again); zips that
// declare huge sizes or hold a lying size (a zip bomb). Every case ends in verified files or a
// CheckpointError, and a bomb is refused before it takes memory.

import fc from 'fast-check';
import { zipSync } from 'fflate';
import { afterAll, describe, expect, it } from 'vitest';
import { applyByteOps, applyJsonEdits, byteOps, jsonEdits, measure } from '../../../scripts/fuzz.ts';
import { type ReliabilityRow, Tally, outcomeOfAsync, recordReliability } from '../../../scripts/reliability.ts';
import { CheckpointError, importCheckpointZip, parseManifest, readCheckpointFiles } from './checkpoint.ts';
import { checkpointFolder, signState as sign } from './testing.ts';
import { memoryStore, toBytes } from '../../platform/storage/store.ts';
import { unzipFiles, zipFiles } from '../../platform/zip.ts';

const TEST = 'src/marft/checkpoint/checkpoint-zip.fuzz.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('checkpoint-zip', rows));

const readZip = (z: Uint8Array) => async () => {
  const files = importCheckpointZip(z, { maxTotalBytes: 1 << 20 });
  const v = await readCheckpointFiles(memoryStore(files), '');
  expect(v.manifest.files.length).toBeGreaterThan(0);
};

describe('checkpoint zip fuzz', () => {
  it('byte-wise mutations of a checkpoint zip', async () => {
    const folder = await checkpointFolder();
    const zips = [
      zipFiles(folder),
      zipFiles(Object.fromEntries(Object.entries(folder).map(([p, b]) => [`ckpt-000003/${p}`, b]))),
      zipSync(folder, { level: 9 }),
    ];
    for (const z of zips) await readZip(z)(); // the unmutated zips load
    const t = new Tally();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...zips), byteOps, async (z, ops) => {
        t.add(await outcomeOfAsync(readZip(applyByteOps(z, ops)), [CheckpointError]));
      }),
      { numRuns: 2000, seed: 61 },
    );
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), async (b) => {
        t.add(await outcomeOfAsync(readZip(b), [CheckpointError]));
      }),
      { numRuns: 300, seed: 62 },
    );
    rows.push({
      area: 'checkpoint zip',
      fault: 'byte-wise mutations of checkpoint zips (stored, deflated, with a top folder); random bytes',
      cases: t.cases,
      outcome: t.summary('verified (mutation outside the data, e.g. a timestamp)'),
      verdict: 'pass',
      test: TEST,
    });
  });

  it('state.json mutated structurally and re-signed, files edited', async () => {
    const folder = await checkpointFolder();
    const body = JSON.parse(new TextDecoder().decode(folder['state.json']));
    const keys = fc.constantFrom(
      'format',
      'version',
      'iteration',
      'rng',
      'files',
      'path',
      'bytes',
      'sha256',
      'metrics',
      'model',
      'adapters',
      'roles',
      'mode',
    );
    const t = new Tally();
    await fc.assert(
      fc.asyncProperty(
        jsonEdits(keys),
        fc.boolean(),
        fc.option(fc.tuple(fc.constantFrom(...Object.keys(folder)), byteOps)),
        async (edits, resign, fileEdit) => {
          const edited = applyJsonEdits(body, edits);
          const state =
            resign && edited !== null && typeof edited === 'object' && !Array.isArray(edited)
              ? await sign(edited as Record<string, unknown>)
              : toBytes(JSON.stringify(edited) ?? '');
          const files: Record<string, Uint8Array> = { ...folder, 'state.json': state };
          if (fileEdit) files[fileEdit[0]] = applyByteOps(files[fileEdit[0]], fileEdit[1]);
          t.add(
            await outcomeOfAsync(async () => {
              await parseManifest(state);
              await readCheckpointFiles(memoryStore(files), '');
            }, [CheckpointError]),
          );
        },
      ),
      { numRuns: 2000, seed: 63 },
    );
    rows.push({
      area: 'checkpoint folder',
      fault: 'state.json fields replaced/deleted/added (then re-signed or not); a listed file mutated byte-wise',
      cases: t.cases,
      outcome: t.summary('verified'),
      verdict: 'pass',
      test: TEST,
    });
  });

  it('zips declaring huge sizes or lying about them are refused without inflating', () => {
    const t = new Tally();
    // a real bomb: 64 MiB of zeros deflate to ~64 KiB
    const bomb = zipSync({ 'state.json': new Uint8Array(64 << 20) }, { level: 9 });
    const cases: Array<[string, Uint8Array]> = [['64 MiB bomb over a 1 MiB cap', bomb]];
    // the same entry declaring 4 GiB - 1, and declaring 100 bytes (a lie: it inflates to 64 MiB)
    for (const size of [0xffffffff, 100]) {
      const z = bomb.slice();
      const dv = new DataView(z.buffer);
      for (let i = 0; i + 4 <= z.length; i++) {
        const sig = dv.getUint32(i, true);
        if (sig === 0x04034b50) dv.setUint32(i + 22, size, true);
        if (sig === 0x02014b50) dv.setUint32(i + 24, size, true);
      }
      cases.push([`entry declaring ${size} bytes`, z]);
    }
    for (const [what, z] of cases) {
      const m = measure(() => unzipFiles(z, { maxTotalBytes: 1 << 20 }));
      expect(m.error, what).toBeInstanceOf(CheckpointError);
      expect(m.arrayBufferBytes, what).toBeLessThan(8 << 20);
      t.add(`CheckpointError ${(m.error as CheckpointError).code}`);
    }
    const many = zipSync(Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${i}`, new Uint8Array(1)])));
    const m = measure(() => unzipFiles(many, { maxEntries: 10 }));
    expect((m.error as CheckpointError).code).toBe('ZIP_TOO_LARGE');
    t.add('CheckpointError ZIP_TOO_LARGE');
    rows.push({
      area: 'checkpoint zip',
      fault:
        'zip bombs: 64 MiB deflated entry over the cap, entry declaring 4 GiB, entry lying (declares 100 B, inflates to 64 MiB), too many entries',
      cases: t.cases,
      outcome: `${t.summary()}; < 8 MiB allocated each`,
      verdict: 'pass',
      test: TEST,
    });
  });
});
