// Download a base model from the Hugging Face Hub, opt-in: collapsed until opened, nothing fetched until
// the user types a repo id and lists it; the file list with sizes and what will be stored comes before
// the download, which shows progress and can be paused (resumed later) or cancelled.

import { useState } from 'react';
import { cancelHub, downloadHub, listHub, pauseHub } from '../hub-actions.ts';
import { selectHub, useLab } from '../store.ts';
import { ErrorBox } from '../Notices.tsx';
import { formatBytes } from '../runs/StoragePanel.tsx';

export function HubPicker() {
  const hub = useLab(selectHub);
  const [repo, setRepo] = useState('');
  const [token, setToken] = useState(''); // only in this component's memory: never stored or logged
  const busy = hub.status === 'listing' || hub.status === 'downloading';
  const l = hub.listing;
  return (
    <details className="hub" data-testid="hub-picker">
      <summary>Download from the Hugging Face Hub…</summary>
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (!busy) void listHub(repo, token);
        }}
      >
        <label>
          Hub model id{' '}
          <input
            data-testid="hub-repo"
            value={repo}
            placeholder="HuggingFaceTB/SmolLM2-135M-Instruct"
            size={36}
            onChange={(e) => setRepo(e.target.value)}
            disabled={busy}
            spellCheck={false}
          />
        </label>
        <label>
          Access token (gated models; kept in memory only){' '}
          <input
            data-testid="hub-token"
            type="password"
            value={token}
            autoComplete="off"
            size={14}
            onChange={(e) => setToken(e.target.value)}
            disabled={busy}
          />
        </label>
        <button type="submit" data-testid="hub-list" disabled={busy || !repo.trim()}>
          List files
        </button>
      </form>
      {hub.status === 'listing' && (
        <p className="hint" role="status">
          Asking the Hub for the files of {repo.trim()}…
        </p>
      )}
      {l && (
        <div data-testid="hub-listing">
          <table className="hub-files">
            <caption>
              {l.repo} ({l.revision})
            </caption>
            <thead>
              <tr>
                <th scope="col">file</th>
                <th scope="col">size</th>
              </tr>
            </thead>
            <tbody>
              {l.files.map((f) => (
                <tr key={f.path}>
                  <td>{f.path}</td>
                  <td className="num">{formatBytes(f.size)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p data-testid="hub-summary">
            Downloads {formatBytes(l.bytes)} from huggingface.co and keeps it in this browser's storage as the local model <b>{l.name}</b>{' '}
            (listed in the Runs tab's Storage panel, where it can be deleted).
          </p>
          {hub.status === 'downloading' || hub.status === 'paused' ? (
            <div className="row">
              <progress data-testid="hub-progress" aria-label="download progress" max={l.bytes} value={hub.progress?.done ?? 0} />
              <span role="status">
                {hub.status === 'paused' ? 'Paused at ' : ''}
                {formatBytes(hub.progress?.done ?? 0)} of {formatBytes(l.bytes)}
                {hub.status === 'downloading' && hub.progress ? ` (${hub.progress.file})` : ''}
              </span>
              {hub.status === 'downloading' ? (
                <button type="button" data-testid="hub-pause" onClick={() => void pauseHub()}>
                  Pause
                </button>
              ) : (
                <button type="button" data-testid="hub-download" onClick={() => void downloadHub(token)}>
                  Resume
                </button>
              )}
              <button type="button" data-testid="hub-cancel" onClick={() => void cancelHub()}>
                Cancel
              </button>
            </div>
          ) : (
            <div className="row">
              <button type="button" data-testid="hub-download" onClick={() => void downloadHub(token)}>
                {hub.status === 'error' ? 'Retry download' : `Download ${formatBytes(l.bytes)}`}
              </button>
              <button type="button" data-testid="hub-cancel" onClick={() => void cancelHub()}>
                Cancel
              </button>
            </div>
          )}
        </div>
      )}
      {hub.status === 'error' && hub.error && <ErrorBox error={hub.error} testid="hub-error" />}
    </details>
  );
}
