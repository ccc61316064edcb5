// The contract between a sandbox host (src/platform/sandbox: a Node worker thread or a browser Worker) and
// what runs user code in it (src/envs/module/host.ts): text messages both ways and a fatal event when the
// sandbox dies. Kept on the bottom floor because the two sides sit in layers that may not import each other.

/** Why a sandbox stopped on its own: its code does not parse, it ran out of memory, or it crashed. */
export type SandboxFatal =
  | { kind: 'syntax'; message: string; line?: number; column?: number }
  | { kind: 'memory'; message: string }
  | { kind: 'crash'; message: string };

export interface SandboxEvents {
  /** A JSON text from the guest: {kind: 'ready'} once loaded, then replies and logs (see guest.ts). */
  onMessage(text: string): void;
  onFatal(fatal: SandboxFatal): void;
}

export interface SandboxLimits {
  /** Heap limit of the sandbox in MiB (Node: worker resourceLimits; browser: not enforceable, see browser.ts). */
  memoryMb: number;
}

export interface Sandbox {
  /** Sends one JSON request to the guest. */
  send(text: string): void;
  /** Stops it at once, even in an endless loop. */
  terminate(): void;
}

/**
 * Starts a sandbox running `body` (an environment module prepared by src/envs/module/source.ts: the
 * statements of an async function that sets __marft_module.default; or the code environment's candidate
 * with its test runner, src/envs/code-run.ts), named `name` in errors and stacks.
 */
export type SandboxSpawner = (body: string, name: string, limits: SandboxLimits, events: SandboxEvents) => Sandbox;
