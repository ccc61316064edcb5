// Start, pause, single step, stop, and the adapter download; the run's status. Always visible. Pause and
// Stop say "pausing…" / "stopping…" at once (the run abandons the iteration in flight within seconds);
// after either, Continue trains the run on from its last completed iteration and New run starts afresh.

import { useState } from 'react';
import { downloadAdapters, pauseTraining, resumeTraining, startTraining, stepTraining, stopTraining } from './actions.ts';
import { selectGpu, selectRun, useLab } from './store.ts';

export function ControlBar() {
  const run = useLab(selectRun);
  const gpu = useLab(selectGpu);
  const [until, setUntil] = useState('');
  const busy = ['loading', 'running', 'pausing', 'stopping', 'recovering'].includes(run.status);
  // a stopped run stays loaded at its last completed iteration: Continue trains it on, as after a pause
  const paused = run.status === 'paused' || (run.status === 'stopped' && run.runId !== null);
  const noGpu = gpu.status !== 'ready';
  const hasRun = run.runId !== null && run.status !== 'loading';
  const target = until.trim() === '' ? undefined : Number(until);
  return (
    <section className="controls" data-testid="control-bar">
      <span
        className={`status status-${run.status}`}
        data-testid="run-status"
        data-state={run.status}
        data-iteration={run.iteration}
        role="status"
        aria-live="polite"
      >
        {run.status === 'pausing' || run.status === 'stopping' ? `${run.status}…` : run.status}
        {run.runId ? ` · ${run.runId}` : ''}
      </span>
      {(run.checkpoint || run.checkpointSaving !== null) && (
        <span
          className="last-checkpoint"
          data-testid="last-checkpoint"
          data-iteration={run.checkpointIteration ?? ''}
          data-saving={run.checkpointSaving !== null}
          title="the newest checkpoint in the run folder: a reload or a crash resumes from it"
        >
          {run.checkpoint ? `checkpoint ${run.checkpoint}` : 'checkpoint'}
          {run.checkpointAt !== null ? ` saved ${new Date(run.checkpointAt).toLocaleTimeString()}` : ''}
          {run.checkpointSaving !== null ? ` · saving iteration ${run.checkpointSaving}…` : ''}
        </span>
      )}
      <button
        type="button"
        className="primary"
        data-testid="start-training"
        disabled={busy || noGpu}
        onClick={() => void (paused ? resumeTraining(target) : startTraining())}
      >
        {paused ? 'Continue ▶' : 'Train ▶'}
      </button>
      {paused && (
        <label className="until" title="train until this iteration (empty: the run's setting, or as many more)">
          until{' '}
          <input
            type="number"
            min={run.iteration + 1}
            value={until}
            placeholder={String(Math.max(run.total, run.iteration + 1))}
            onChange={(e) => setUntil(e.target.value)}
            data-testid="until"
          />
        </label>
      )}
      <button type="button" data-testid="pause-training" disabled={run.status !== 'running'} onClick={() => void pauseTraining()}>
        Pause
      </button>
      <button type="button" data-testid="step-training" disabled={busy || noGpu} onClick={() => void stepTraining()}>
        Step
      </button>
      <button type="button" data-testid="stop-training" disabled={!busy && run.status !== 'paused'} onClick={() => void stopTraining()}>
        Stop
      </button>
      {paused && (
        <button
          type="button"
          data-testid="new-run"
          onClick={() => void startTraining(false, true)}
          title="start a new run from the builder's settings"
        >
          New run
        </button>
      )}
      <span className="spacer" />
      <button type="button" data-testid="export-adapters" disabled={!hasRun} onClick={() => void downloadAdapters()}>
        Download adapters (PEFT zip)
      </button>
    </section>
  );
}
