// Checkpoint stores that run in the browser (memory, OPFS) and the error catalogue. The Node directory
// store is imported from ./node.ts directly, so browser bundles never pull node:fs.
export * from './errors.ts';
export * from './store.ts';
export * from './opfs.ts';
