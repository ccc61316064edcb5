// The builder's config lifecycle as module-level actions: restore at start and keep in localStorage,
// undo/redo (buttons and Ctrl/Cmd+Z, Shift+Ctrl/Cmd+Z), export/import of the run-config JSON, the share
// link, and a live run's config: read-only, "edit a copy", "back to the run's config". The pure parts
// (storage format, validation, link encoding, the undo stack) are config-io.ts and builder/history.ts.

import { CodedError, messageWithoutHint } from '../common/errors.ts';
import { loadPresetRun } from './actions.ts';
import { emptyHistory, redo, undo } from './builder/history.ts';
import { decodeConfigLink, exportConfigJson, importConfigText, isConfigLink, restoreBuilder, saveBuilder, shareLink } from './config-io.ts';
import { addNotice, selectBuilderLocked, setDraft, showSnapshot, useLab } from './store.ts';

const get = useLab.getState;
const set = useLab.setState;

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** The saved builder (or nothing) into the store; a saved config that no longer validates is reported and left aside. */
export function restoreSavedBuilder(): void {
  let r: ReturnType<typeof restoreBuilder>;
  try {
    r = restoreBuilder(localStorage);
  } catch {
    return; // storage disabled: the lab starts from its default, as before
  }
  if (r.kind === 'ok') {
    setDraft(r.config, { preset: r.preset, undo: emptyHistory() }); // the start of this session's history
  } else if (r.kind === 'invalid') {
    addNotice(
      {
        code: 'CONFIG_RESTORE',
        message: `${r.reason}${
          r.issues.length
            ? `: ${r.issues
                .slice(0, 5)
                .map((i) => i.message)
                .join('; ')}${r.issues.length > 5 ? '; …' : ''}`
            : ''
        }. The builder starts from the default config.`,
        hint: 'The saved builder is replaced by your next edit; import an exported JSON file to get an older config back.',
      },
      'restoring the builder',
      'info',
    );
  }
}

/** Saves the builder on every change of its config or preset (once a second at most); a full storage is reported once. */
export function keepBuilderSaved(): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let storageWarned = false;
  const flush = () => {
    timer = null;
    try {
      saveBuilder(localStorage, get().draft, get().preset);
    } catch (e) {
      if (storageWarned) return;
      storageWarned = true;
      addNotice(
        {
          code: 'CONFIG_STORAGE',
          message: `the builder could not be saved in this browser (${(e as Error).message})`,
          hint: "A large uploaded dataset can exceed the browser's local storage; export the config as JSON to keep it.",
        },
        'saving the builder',
        'info',
      );
    }
  };
  return useLab.subscribe((s, prev) => {
    if (s.draft === prev.draft && s.preset === prev.preset) return;
    timer ??= setTimeout(flush, 300);
  });
}

// ---- undo / redo ----

export function undoBuilder(): void {
  const s = get();
  if (selectBuilderLocked(s)) return;
  const r = undo(s.undo, { draft: s.draft, agentIds: s.agentIds, preset: s.preset });
  if (r) showSnapshot(r.snapshot, r.history);
}

export function redoBuilder(): void {
  const s = get();
  if (selectBuilderLocked(s)) return;
  const r = redo(s.undo, { draft: s.draft, agentIds: s.agentIds, preset: s.preset });
  if (r) showSnapshot(r.snapshot, r.history);
}

/** Ctrl/Cmd+Z and Shift+Ctrl/Cmd+Z (and Ctrl+Y) on the Build tab; text boxes keep their own undo. */
export function onUndoKey(e: KeyboardEvent): void {
  if (!(e.ctrlKey || e.metaKey) || e.altKey || get().tab !== 'build') return;
  const key = e.key.toLowerCase();
  if (key !== 'z' && key !== 'y') return;
  const t = e.target as HTMLElement | null;
  if (t && (t.tagName === 'TEXTAREA' || (t.tagName === 'INPUT' && (t as HTMLInputElement).type === 'text'))) return;
  e.preventDefault();
  if (key === 'y' || e.shiftKey) redoBuilder();
  else undoBuilder();
}

// ---- export, import, link ----

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** The builder's config as the CLI's run-config JSON (`marft train --config marft-config.json`). */
export const exportConfig = (): void => download('marft-config.json', exportConfigJson(get().draft));

/** A run-config JSON file into the builder, or a notice listing every issue (the builder is left as it was). */
export async function importConfig(file: File): Promise<void> {
  const r = importConfigText(await file.text());
  if (!r.config) {
    addNotice(
      {
        code: 'CONFIG_INVALID',
        message: `${file.name} is not a usable run config (${plural(r.issues.length, 'problem')}):\n${r.issues.map((i) => `• ${i.message}`).join('\n')}`,
        hint: "Fix the file (the fields are named as in the CLI's run config) and import it again; the builder is unchanged.",
      },
      `importing ${file.name}`,
    );
    return;
  }
  setDraft(r.config, { preset: 'custom', selectedAgent: 0, connectFrom: null });
  addNotice(
    { code: 'CONFIG_LOADED', message: `imported ${file.name} into the builder (Undo brings the previous config back)` },
    'importing a config',
    'info',
  );
}

/** The page link that opens the lab with the builder's config; null (and a notice) when it is too long. */
export function configLink(): string | null {
  try {
    return shareLink(location.href, get().draft);
  } catch (e) {
    if (!(e instanceof CodedError)) throw e;
    addNotice({ code: e.code, message: messageWithoutHint(e.message), hint: e.hint }, 'making a share link');
    return null;
  }
}

/**
 * Applies ?config= of the page link: a preset run's name or an encoded config. The parameter is then
 * dropped from the address, so a reload shows the (saved) builder rather than the link again.
 */
export function openConfigLink(): void {
  const url = new URL(location.href);
  const value = url.searchParams.get('config');
  if (value === null) return;
  if (isConfigLink(value)) {
    try {
      setDraft(decodeConfigLink(value), { preset: 'custom', selectedAgent: 0, connectFrom: null });
      addNotice({ code: 'CONFIG_LOADED', message: 'the config of the link is in the builder' }, 'opening a config link', 'info');
    } catch (e) {
      if (!(e instanceof CodedError)) throw e;
      addNotice({ code: e.code, message: messageWithoutHint(e.message), hint: e.hint }, 'opening a config link');
    }
  } else loadPresetRun(value);
  url.searchParams.delete('config');
  history.replaceState(null, '', url.toString());
}

// ---- a live run's config ----

/** Unlocks the builder on a copy of the run's config; its edits apply to a new run only. */
export function editCopy(): void {
  set({ copyOf: get().run.runId });
}

/** Drops the copy: the builder shows the run's own config again, read-only. */
export function backToRunConfig(): void {
  const c = get().runConfig;
  if (c) setDraft(c, { copyOf: null, selectedAgent: 0, connectFrom: null });
}
