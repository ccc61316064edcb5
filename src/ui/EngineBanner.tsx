// The banner shown when the engine's worker is gone (client.ts WorkerWatch): what happened, that saved runs
// are safe, and a button that starts a fresh engine and reopens the run from its last checkpoint.

import { restartEngineAndResume } from './actions.ts';
import { selectEngine, selectRun, useLab } from './store.ts';

export function EngineBanner() {
  const engine = useLab(selectEngine);
  const run = useLab(selectRun);
  if (engine.gone === null) return null;
  return (
    <div className="error-box engine-banner" role="alert" data-testid="engine-gone">
      <strong>The lab's engine stopped</strong>
      <p className="msg">Its Web Worker is gone: {engine.gone}.</p>
      <p className="hint">
        Runs and checkpoints are kept in this browser's storage.{' '}
        {run.runId
          ? `Restarting reopens ${run.runId} from its last checkpoint and goes on training if it was.`
          : 'Restarting starts a fresh engine.'}
      </p>
      <button type="button" data-testid="restart-engine" disabled={engine.restarting} onClick={() => void restartEngineAndResume()}>
        {engine.restarting ? 'Restarting…' : 'Restart the engine'}
      </button>
    </div>
  );
}
