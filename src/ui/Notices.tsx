// Error and info messages: each with its catalogue title, code, message and hint; dismissable. Storage
// problems carry a button to the Storage panel, where old runs and models can be deleted.

import type { WorkerError } from '../worker/api.ts';
import { openStorage } from './actions.ts';
import { errorHint, errorTitle } from './errors.ts';
import { dismissNotice, selectNotices, useLab } from './store.ts';

export function ErrorBox({ error, testid, context }: { error: WorkerError; testid?: string; context?: string }) {
  const hint = errorHint(error);
  return (
    <div className="error-box" role="alert" data-testid={testid} data-code={error.code}>
      <strong>{errorTitle(error.code)}</strong> <code>{error.code}</code>
      {context ? <span className="hint"> — while {context}</span> : null}
      <p className="msg">{error.message}</p>
      {hint && <p className="hint">{hint}</p>}
    </div>
  );
}

/** A full quota, or a run paused because its checkpoint could not be written: the Storage panel frees space. */
const needsSpace = (e: WorkerError): boolean => e.code === 'STORAGE_FULL' || (e.code === 'RUN_PAUSED' && e.pauseReason !== 'environment');

export function Notices() {
  const notices = useLab(selectNotices);
  if (!notices.length) return null;
  return (
    <div className="notices" data-testid="notices">
      {notices.map((n) => (
        <div key={n.id} className={`notice ${n.level}`} data-testid={`notice-${n.code}`}>
          {n.level === 'error' ? (
            <ErrorBox error={n} context={n.context} />
          ) : (
            <div className="info-box">
              <strong>{errorTitle(n.code)}</strong> {n.message}
              {n.hint ? <p className="hint">{n.hint}</p> : null}
            </div>
          )}
          {needsSpace(n) && (
            <button type="button" data-testid="free-space" onClick={() => void openStorage()}>
              Free space…
            </button>
          )}
          <button type="button" className="link" aria-label="dismiss" onClick={() => dismissNotice(n.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}
