// Entry of the page: renders the app, then probes the GPU in the worker (after a check on this thread,
// so a browser without WebGPU gets the message at once rather than a worker that never answers).

import { createRoot } from 'react-dom/client';
import * as Comlink from 'comlink';
import type { HookPoint } from '../worker/api.ts';
import { getEngine } from '../worker/client.ts';
import { App } from './App.tsx';
import { connectEngine } from './actions.ts';
import { keepBuilderSaved, openConfigLink, restoreSavedBuilder } from './config-actions.ts';
import { setGpuState } from './store.ts';
import './style.css';

createRoot(document.getElementById('root')!).render(<App />);

// The builder as it was left (localStorage); then a link's config wins: /?config=<name> opens a preset run
// config (configs/<name>.json, e.g. classroom), /?config=cfg1.<…> the config a share link carries.
restoreSavedBuilder();
keepBuilderSaved(); // before the link, so a link's config is what a reload shows
openConfigLink();

async function probe(): Promise<void> {
  if (!('gpu' in navigator) || !navigator.gpu) {
    setGpuState({
      status: 'error',
      error: {
        code: 'NO_WEBGPU',
        message: isSecureContext
          ? 'This browser does not expose WebGPU (navigator.gpu is undefined).'
          : 'WebGPU needs a secure context: open the lab via http://localhost or https://.',
        hint: 'Use Chrome or Edge 113+; on Linux start Chrome with --enable-unsafe-webgpu or enable chrome://flags/#enable-unsafe-webgpu.',
      },
    });
    return;
  }
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error('the GPU worker did not answer within 30 s')), 30_000),
  );
  try {
    const r = await Promise.race([getEngine().probe(), timeout]);
    setGpuState(r.ok ? { status: 'ready', probe: r.value } : { status: 'error', error: r.error });
    if (r.ok) await connectEngine();
  } catch (e) {
    setGpuState({
      status: 'error',
      error: { code: 'WORKER', message: (e as Error).message, hint: 'Reload the page; if it persists, check the browser console.' },
    });
  }
}

// Hooks for tests and demos: loseDevice destroys the worker's GPU device as a driver reset would;
// in a build with test hooks only (__TEST_HOOKS__, see vite.config.ts), crashWorker closes the engine's worker
// as the browser would kill it (at a phase or an export, when named), holdWorker resolves once the worker
// waits at that point (src/worker/test-hooks.ts) and rejects if arming the hold fails (the worker already
// gone), releaseWorker ends a wait;
// runHistory gives a stored run's metric history; agentLogits gives the lab's logits for an agent of a checkpoint, and runOnnx runs an ONNX export zip in
// onnxruntime-web on this page (loaded on first use), so an export can be checked against the lab.
(globalThis as { marftLab?: unknown }).marftLab = {
  loseDevice: () => getEngine().debugLoseDevice(),
  ...(__TEST_HOOKS__
    ? {
        crashWorker: (point?: HookPoint) => getEngine().debugCrash(point),
        holdWorker: (point: HookPoint, iteration?: number) =>
          new Promise<void>((held, fail) => {
            getEngine()
              .debugHold(
                point,
                iteration,
                Comlink.proxy(() => held()),
              )
              .catch(fail);
          }),
        releaseWorker: () => getEngine().debugRelease(),
      }
    : {}),
  runHistory: (runId: string) => getEngine().runHistory(runId),
  agentLogits: (runId: string, role: string, ids: number[], checkpoint?: string) => getEngine().agentLogits(runId, role, ids, checkpoint),
  runOnnx: async (zip: Uint8Array, ids: number[], executionProvider?: 'webgpu' | 'wasm') =>
    (await import('./onnx-run.ts')).runOnnxZip(zip, ids, executionProvider),
};

void probe();
