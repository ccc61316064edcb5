// A small ONNX graph builder over onnx-proto: named values, nodes with typed attributes, initializers
// kept as typed arrays (so the serialiser can put them inline or in an external data file), int64
// constants, and the ModelProto. Node output names are generated from the op and a counter unless given.
// Browser-safe (no node: imports).

import onnxProto from 'onnx-proto';

export const { onnx } = onnxProto;
export type ElemType = 'float32' | 'int64' | 'bool';

export const ONNX_TYPES: Record<ElemType, number> = {
  float32: onnx.TensorProto.DataType.FLOAT,
  int64: onnx.TensorProto.DataType.INT64,
  bool: onnx.TensorProto.DataType.BOOL,
};

/** A weight or constant: its bytes go in raw_data or in the external data file. */
export interface Initializer {
  name: string;
  type: ElemType;
  dims: number[];
  /** Little-endian element bytes (Float32Array / BigInt64Array views). */
  data: Float32Array | BigInt64Array | Uint8Array;
}

/** A graph input/output: a dimension is a number or a symbolic name ("batch", "seq"). */
export interface ValueInfo {
  name: string;
  type: ElemType;
  shape: Array<number | string>;
}

export type AttrValue = number | number[] | string | { float: number } | { floats: number[] };

const AT = onnx.AttributeProto.AttributeType;

function attribute(name: string, v: AttrValue): InstanceType<typeof onnx.AttributeProto> {
  if (typeof v === 'string') return onnx.AttributeProto.create({ name, type: AT.STRING, s: new TextEncoder().encode(v) });
  if (typeof v === 'number') return onnx.AttributeProto.create({ name, type: AT.INT, i: v });
  if (Array.isArray(v)) return onnx.AttributeProto.create({ name, type: AT.INTS, ints: v });
  if ('float' in v) return onnx.AttributeProto.create({ name, type: AT.FLOAT, f: v.float });
  return onnx.AttributeProto.create({ name, type: AT.FLOATS, floats: v.floats });
}

function valueInfo(v: ValueInfo): InstanceType<typeof onnx.ValueInfoProto> {
  return onnx.ValueInfoProto.create({
    name: v.name,
    type: {
      tensorType: {
        elemType: ONNX_TYPES[v.type],
        shape: { dim: v.shape.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  });
}

export class GraphBuilder {
  readonly nodes: Array<InstanceType<typeof onnx.NodeProto>> = [];
  readonly initializers: Initializer[] = [];
  readonly inputs: ValueInfo[] = [];
  readonly outputs: ValueInfo[] = [];
  private counter = 0;
  private names = new Set<string>();
  private int64Cache = new Map<string, string>();

  constructor(readonly name: string) {}

  private fresh(base: string): string {
    let n = `${base}_${this.counter++}`;
    while (this.names.has(n)) n = `${base}_${this.counter++}`;
    this.names.add(n);
    return n;
  }

  input(v: ValueInfo): string {
    this.inputs.push(v);
    this.names.add(v.name);
    return v.name;
  }

  output(v: ValueInfo): void {
    this.outputs.push(v);
  }

  /** Adds an initializer; returns its name. */
  weight(name: string, type: ElemType, dims: number[], data: Initializer['data']): string {
    const n = dims.reduce((a, b) => a * b, 1);
    const bytes = type === 'bool' ? 1 : type === 'int64' ? 8 : 4;
    if (data.byteLength !== n * bytes)
      throw new Error(`ONNX initializer ${name}: ${data.byteLength} bytes for dims [${dims.join(', ')}] ${type}`);
    if (this.names.has(name)) throw new Error(`ONNX graph: the name ${name} is used twice`);
    this.names.add(name);
    this.initializers.push({ name, type, dims, data });
    return name;
  }

  /** An int64 constant tensor (1-D unless `dims` is given), shared between uses. */
  int64(values: number[], dims: number[] = [values.length]): string {
    const key = `${dims.join('x')}:${values.join(',')}`;
    const hit = this.int64Cache.get(key);
    if (hit) return hit;
    const name = this.fresh(`const_i64`);
    this.names.delete(name);
    this.weight(name, 'int64', dims, BigInt64Array.from(values.map(BigInt)));
    this.int64Cache.set(key, name);
    return name;
  }

  /** A float32 scalar constant. */
  float(value: number): string {
    const name = this.fresh('const_f32');
    this.names.delete(name);
    return this.weight(name, 'float32', [], Float32Array.of(value));
  }

  /** Adds a node; returns its outputs' names (`outputs` names them, or a count generates names). */
  node(op: string, inputs: string[], attrs: Record<string, AttrValue> = {}, outputs: number | string[] = 1): string[] {
    const outs = typeof outputs === 'number' ? Array.from({ length: outputs }, () => this.fresh(op)) : outputs;
    for (const o of outs) this.names.add(o);
    this.nodes.push(
      onnx.NodeProto.create({
        opType: op,
        name: this.fresh(`${op}_node`),
        input: inputs,
        output: outs,
        attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
      }),
    );
    return outs;
  }

  /** One-output node. */
  op(op: string, inputs: string[], attrs: Record<string, AttrValue> = {}, output?: string): string {
    return this.node(op, inputs, attrs, output ? [output] : 1)[0];
  }
}

export interface ModelMeta {
  opset: number;
  producer: string;
  docString?: string;
  metadata?: Record<string, string>;
}

/**
 * The ModelProto with every initializer either inline (raw_data) or pointing into the external data file
 * (`external` maps an initializer name to its offset and length there).
 */
export function modelProto(
  g: GraphBuilder,
  meta: ModelMeta,
  external: { location: string; entries: Map<string, { offset: number; length: number }> } | null = null,
): InstanceType<typeof onnx.ModelProto> {
  const initializer = g.initializers.map((t) => {
    const base = { name: t.name, dims: t.dims, dataType: ONNX_TYPES[t.type] };
    const ext = external?.entries.get(t.name);
    if (ext) {
      return onnx.TensorProto.create({
        ...base,
        dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
        externalData: [
          { key: 'location', value: external!.location },
          { key: 'offset', value: String(ext.offset) },
          { key: 'length', value: String(ext.length) },
        ],
      });
    }
    return onnx.TensorProto.create({ ...base, rawData: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength) });
  });
  return onnx.ModelProto.create({
    irVersion: 8,
    producerName: meta.producer,
    docString: meta.docString ?? '',
    opsetImport: [{ domain: '', version: meta.opset }],
    metadataProps: Object.entries(meta.metadata ?? {}).map(([key, value]) => ({ key, value })),
    graph: onnx.GraphProto.create({
      name: g.name,
      node: g.nodes,
      initializer,
      input: g.inputs.map(valueInfo),
      output: g.outputs.map(valueInfo),
    }),
  });
}
