// Zips for downloads and uploads (fflate: works in the browser and in Node). The writer is deterministic
// (sorted entries, a fixed timestamp) and stores weight files (safetensors, onnx) uncompressed.
// The reader distrusts its input: every entry name must be a plain relative path (no "..", no absolute
// or drive paths, no backslashes), names are unique, no entry is a symlink (its Unix mode in the central
// directory: a link extracted elsewhere would let a later write escape the folder), the declared sizes
// are summed against a cap before anything is inflated (a zip bomb is refused before it takes memory),
// and each entry's size and CRC-32 are checked after inflating.

import { unzipSync, zipSync, type Zippable } from 'fflate';
import { errorMessage } from '../common/errors.ts';
import { CheckpointError, ckptFail } from './storage/errors.ts';
import { pathParts, toBytes } from './storage/store.ts';

export interface UnzipLimits {
  /** Cap on the sum of the entries' uncompressed sizes (default 2 GiB). */
  maxTotalBytes?: number;
  /** Cap on the number of entries (default 10 000). */
  maxEntries?: number;
}

const FIXED_TIME = new Date(2000, 0, 1); // zip stores local DOS time; any fixed date >= 1980 keeps output stable
/** Weights (f32 noise barely deflates): stored, not compressed. */
const STORED = /\.(safetensors|onnx|onnx\.data)$/;

export function zipFiles(files: Record<string, Uint8Array | string>): Uint8Array {
  const data: Zippable = {};
  for (const path of Object.keys(files).sort()) {
    const name = pathParts(path).join('/');
    if (name === '') ckptFail('PATH_INVALID', path, 'an empty file name');
    if (name in data) ckptFail('PATH_INVALID', path, 'two files with this name');
    data[name] = [toBytes(files[path]), { level: STORED.test(name) ? 0 : 6, mtime: FIXED_TIME }];
  }
  return zipSync(data);
}

// ---- CRC-32 (IEEE), for checking inflated entries ----------------------------------------------------

/** The CRC-32 of each byte value (computed once, at import: 2048 steps). */
const CRC_TABLE: Readonly<Uint32Array> = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(b: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < b.length; i++) c = CRC_TABLE[(c ^ b[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

/**
 * name -> CRC-32 from the central directory (zip64 entries and unreadable directories are skipped), names
 * decoded as fflate does (UTF-8 when flag bit 11 is set, else one char per byte); refuses a symlink entry
 * (the Unix mode in the external attributes' high 16 bits), whatever its name.
 */
function centralCrcs(bytes: Uint8Array): Map<string, number> {
  const out = new Map<string, number>();
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let e = bytes.length - 22;
  while (e >= 0 && dv.getUint32(e, true) !== 0x06054b50) e--;
  if (e < 0) return out;
  const count = dv.getUint16(e + 10, true);
  let o = dv.getUint32(e + 16, true);
  const dec = new TextDecoder();
  for (let i = 0; i < count && o + 46 <= bytes.length && dv.getUint32(o, true) === 0x02014b50; i++) {
    const crc = dv.getUint32(o + 16, true);
    const nameLen = dv.getUint16(o + 28, true);
    const raw = bytes.subarray(o + 46, o + 46 + nameLen);
    const name = dv.getUint16(o + 8, true) & 0x800 ? dec.decode(raw) : String.fromCharCode(...raw);
    if (((dv.getUint32(o + 38, true) >>> 16) & S_IFMT) === S_IFLNK)
      ckptFail('ZIP_INVALID', 'zip', `entry ${JSON.stringify(name)} is a symbolic link (a checkpoint holds only plain files)`);
    const next = o + 46 + nameLen + dv.getUint16(o + 30, true) + dv.getUint16(o + 32, true);
    out.set(name, crc);
    o = next;
  }
  return out;
}

/** The files of a zip (folders skipped), validated as the header says. */
export function unzipFiles(bytes: Uint8Array, limits: UnzipLimits = {}): Record<string, Uint8Array> {
  const maxTotal = limits.maxTotalBytes ?? 2 ** 31;
  const maxEntries = limits.maxEntries ?? 10_000;
  const where = 'zip';
  if (!(bytes instanceof Uint8Array) || bytes.length < 22)
    ckptFail('ZIP_INVALID', where, `${bytes?.length ?? 0} bytes is too short for a zip`);
  const declared = new Map<string, number>();
  let total = 0;
  let entries = 0;
  const crcs = centralCrcs(bytes);
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(bytes, {
      filter: (f) => {
        if (++entries > maxEntries) ckptFail('ZIP_TOO_LARGE', where, `more than ${maxEntries} entries`);
        if (f.name.endsWith('/') && f.originalSize === 0) return false; // a folder entry
        let name: string;
        try {
          name = pathParts(f.name).join('/');
        } catch (e) {
          return ckptFail('ZIP_INVALID', where, `entry ${JSON.stringify(f.name)} has an unsafe path (${errorMessage(e).split('\n')[0]})`);
        }
        if (name !== f.name) ckptFail('ZIP_INVALID', where, `entry ${JSON.stringify(f.name)} is not a plain relative path`);
        if (declared.has(name)) ckptFail('ZIP_INVALID', where, `entry "${name}" appears twice`);
        if (f.compression !== 0 && f.compression !== 8)
          ckptFail('ZIP_INVALID', where, `entry "${name}" uses compression method ${f.compression} (only stored and deflate are read)`);
        total += f.originalSize;
        if (total > maxTotal) ckptFail('ZIP_TOO_LARGE', where, `the entries expand to more than ${maxTotal} bytes (at "${name}")`);
        declared.set(name, f.originalSize);
        return true;
      },
    });
  } catch (e) {
    if (e instanceof CheckpointError) throw e;
    return ckptFail('ZIP_INVALID', where, `cannot read the zip (${errorMessage(e)})`);
  }
  for (const [name, data] of Object.entries(files)) {
    const size = declared.get(name);
    if (data.length !== size) ckptFail('ZIP_INVALID', name, `inflates to ${data.length} bytes, the zip says ${size}`);
    const crc = crcs.get(name);
    if (crc !== undefined && crc32(data) !== crc) ckptFail('ZIP_INVALID', name, 'CRC-32 mismatch: the zip is corrupted');
  }
  return files;
}
