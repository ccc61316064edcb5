// Serialising a built graph: one .onnx file with every weight inline, or — past ~1.5 GB, since a protobuf
// message must stay under 2 GB — the ONNX external-data layout: the .onnx holds the graph and tensor
// metadata, each initializer over `sizeThreshold` bytes points (location, offset, length) into one data
// file written next to it (FILE.onnx.data), offsets aligned to 4096 bytes as onnx's own writer may do.
// The data file is produced chunk by chunk (the initializers' own bytes plus zero padding), so a caller
// can stream it to disk without building one multi-gigabyte buffer. Browser-safe.

import { type GraphBuilder, type ModelMeta, modelProto, onnx } from './graph.ts';

/** Above this many bytes of weights the model goes to external data (protobuf's hard limit is 2 GiB). */
export const EXTERNAL_DATA_BYTES = 1.5e9;
/** Initializers smaller than this stay inline (onnx's convert_model_to_external_data default). */
export const EXTERNAL_SIZE_THRESHOLD = 1024;
const ALIGN = 4096;

export interface EncodeOptions {
  /** 'auto' (default): external data when the weights exceed EXTERNAL_DATA_BYTES. */
  externalData?: boolean | 'auto';
  /** The data file's name as written in the model (a path relative to the .onnx), e.g. "model.onnx.data". */
  dataLocation: string;
}

export interface EncodedModel {
  /** The .onnx file. */
  model: Uint8Array;
  /** The external data file, when used: its size, and its bytes as chunks in order. */
  data: { location: string; bytes: number; chunks: () => Iterable<Uint8Array> } | null;
}

export const initializerBytes = (g: GraphBuilder): number => g.initializers.reduce((s, t) => s + t.data.byteLength, 0);

export function encodeModel(g: GraphBuilder, meta: ModelMeta, opts: EncodeOptions): EncodedModel {
  const mode = opts.externalData ?? 'auto';
  const external = mode === true || (mode === 'auto' && initializerBytes(g) > EXTERNAL_DATA_BYTES);
  if (!external) return { model: onnx.ModelProto.encode(modelProto(g, meta)).finish(), data: null };

  const entries = new Map<string, { offset: number; length: number }>();
  const order: Array<{ bytes: Uint8Array; pad: number }> = [];
  let offset = 0;
  for (const t of g.initializers) {
    if (t.data.byteLength < EXTERNAL_SIZE_THRESHOLD) continue;
    const start = Math.ceil(offset / ALIGN) * ALIGN;
    entries.set(t.name, { offset: start, length: t.data.byteLength });
    order.push({ bytes: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), pad: start - offset });
    offset = start + t.data.byteLength;
  }
  const model = onnx.ModelProto.encode(modelProto(g, meta, { location: opts.dataLocation, entries })).finish();
  return {
    model,
    data: {
      location: opts.dataLocation,
      bytes: offset,
      *chunks() {
        for (const { bytes, pad } of order) {
          if (pad) yield new Uint8Array(pad);
          yield bytes;
        }
      },
    },
  };
}

/** The external data file as one buffer (tests, small models, the browser's download). */
export function concatChunks(chunks: Iterable<Uint8Array>, bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}
