// The YAML file changed on disk: a banner when the editor learns of it (the
// server pushes workflow_changed over GET /api/ws; while that socket is
// down the editor checks the file every few seconds), and the merge view
// (a write refused with 409, or "Merge…" from the banner): every change of
// yours and of the disk against the text you started from, highlighted,
// with a choice per change.
import { useEffect, useMemo, useRef, useState } from 'react';
import { ApiError, errorMessage } from '../api/client';
import { changeLines, merge2, merge3, mergedText, openConflicts, type MergeBlock, type MergeChoice } from '../editor/merge';
import { useApp } from '../store/app';
import { useEditor } from '../store/editor';
import { isYamlDirty, useYamlFile } from '../store/yamlFile';

/** How often an open YAML file is compared with the disk while changes are not pushed (GET /api/ws down) and the tab is visible. */
export const DISK_POLL_MS = 3000;

/**
 * Compares the open YAML file with the disk when the window gets focus,
 * when GET /api/ws (re)connects (changes made while it was down were not
 * pushed), and every DISK_POLL_MS while it is down.
 */
export function useDiskWatch(): void {
  const id = useYamlFile((s) => s.workflowId);
  const yaml = useEditor((s) => s.kind === 'yaml');
  const live = useYamlFile((s) => s.pushLive);
  const wasLive = useRef(live);
  useEffect(() => {
    if (!id || !yaml) return;
    const check = () => {
      if (document.visibilityState === 'visible') void useYamlFile.getState().checkDisk();
    };
    const t = live ? null : setInterval(check, DISK_POLL_MS);
    // Reconnected: what changed while the socket was down was not pushed.
    if (live && !wasLive.current) check();
    wasLive.current = live;
    window.addEventListener('focus', check);
    // How this page learns of disk changes (tests read it: web/TESTING.md).
    document.documentElement.dataset.diskWatch = live ? 'push' : 'poll';
    return () => {
      if (t) clearInterval(t);
      window.removeEventListener('focus', check);
      delete document.documentElement.dataset.diskWatch;
    };
  }, [id, yaml, live]);
}

/** The file changed on disk: reload it, or merge it with the text here. */
export function DiskChangeBanner() {
  const change = useYamlFile((s) => s.diskChange);
  const path = useYamlFile((s) => s.path);
  const dirty = useYamlFile(isYamlDirty);
  const conflict = useYamlFile((s) => s.conflict);
  const toast = useApp((s) => s.toast);
  if (!change || conflict) return null;
  if (change.deleted) {
    return (
      <div className="banner banner--warning" role="alert" data-testid="yaml-disk-change">
        <div className="banner__msg">
          <strong>{path} was deleted on disk.</strong> The text here is all that is left of it: copy it to keep it.
        </div>
        <div className="banner__actions">
          <button className="btn btn--small" onClick={() => useYamlFile.setState({ diskChange: null })} data-testid="yaml-disk-dismiss">
            Dismiss
          </button>
        </div>
      </div>
    );
  }
  const reload = async () => {
    if (dirty && !confirm('Drop your unsaved text and load the file as it is on disk?')) return;
    try {
      await useYamlFile.getState().reload();
      toast(`Loaded ${path} as it is on disk`, 'success');
    } catch (e) {
      toast(`Reload failed: ${errorMessage(e)}`, 'error');
    }
  };
  return (
    <div className="banner banner--warning" role="alert" data-testid="yaml-disk-change">
      <div className="banner__msg">
        <strong>{path} changed on disk.</strong>{' '}
        {dirty
          ? 'You have text here that is not written yet: merge the two, or drop yours.'
          : 'Something else saved it after you opened it. Reload to see and edit what it says now.'}
      </div>
      <div className="banner__actions">
        {dirty && (
          <button className="btn btn--small btn--primary" onClick={() => useYamlFile.getState().mergeDiskChange()} data-testid="yaml-disk-merge">
            Merge…
          </button>
        )}
        <button className={`btn btn--small${dirty ? '' : ' btn--primary'}`} onClick={() => void reload()} data-testid="yaml-disk-reload">
          {dirty ? 'Reload (drop mine)' : 'Reload'}
        </button>
      </div>
    </div>
  );
}

const BY_TEXT: Record<'yours' | 'disk' | 'both', string> = {
  yours: 'changed by you',
  disk: 'changed on disk',
  both: 'changed by you and on disk',
};

function SideLines({ base, side, label, testId }: { base: string[]; side: string[]; label: string; testId: string }) {
  const lines = useMemo(() => changeLines(base, side), [base, side]);
  return (
    <div className="merge-side">
      <div className="merge-side__label">{label}</div>
      <pre className="diff merge-side__lines" data-testid={testId}>
        {lines.length === 0 && <span className="diff__line diff__line--meta">(nothing)</span>}
        {lines.map((l, i) => (
          <span key={i} className={`diff__line diff__line--${l.kind === 'ctx' ? 'ctx' : l.kind}`}>
            {l.kind === 'add' ? '+ ' : l.kind === 'del' ? '- ' : '  '}
            {l.text || ' '}
          </span>
        ))}
      </pre>
    </div>
  );
}

function Hunk({
  b,
  line,
  choice,
  pick,
}: {
  b: Extract<MergeBlock, { kind: 'change' }>;
  line: number;
  choice: MergeChoice | null;
  pick: (c: MergeChoice) => void;
}) {
  const options: Array<[MergeChoice, string]> = [
    ['yours', 'Use mine'],
    ['disk', 'Use disk'],
    ['both', 'Use both'],
  ];
  return (
    <li
      className={`merge-hunk${b.conflict ? ' is-conflict' : ''}${b.conflict && choice === null ? ' is-open' : ''}`}
      data-testid={`yaml-merge-hunk-${b.index}`}
      data-by={b.by}
      data-choice={choice ?? ''}
    >
      <div className="merge-hunk__head">
        <span>
          Line {line}: <b>{BY_TEXT[b.by]}</b>
          {b.conflict ? ' — pick one' : b.by === 'both' ? ' (the same change)' : ''}
        </span>
        <span className="segmented" role="group" aria-label={`Keep which version of line ${line}`}>
          {options.map(([c, text]) => (
            <button
              key={c}
              className={`segmented__btn${choice === c ? ' is-active' : ''}`}
              aria-pressed={choice === c}
              onClick={() => pick(c)}
              data-testid={`yaml-merge-pick-${b.index}-${c}`}
            >
              {text}
            </button>
          ))}
        </span>
      </div>
      <div className="merge-hunk__sides">
        <SideLines base={b.base} side={b.yours} label="Yours" testId={`yaml-merge-yours-${b.index}`} />
        <SideLines base={b.base} side={b.disk} label="On disk" testId={`yaml-merge-disk-${b.index}`} />
      </div>
    </li>
  );
}

/** A write refused because the file changed on disk, or a disk change to merge: per-change choices. */
export function YamlConflictView() {
  const c = useYamlFile((s) => s.conflict);
  const path = useYamlFile((s) => s.path);
  const toast = useApp((s) => s.toast);
  const [busy, setBusy] = useState(false);
  const [choices, setChoices] = useState<Record<number, MergeChoice>>({});
  const yours = c ? (c.yours ?? useYamlFile.getState().source) : '';
  const blocks = useMemo(() => (c ? (c.base !== undefined ? merge3(c.base, yours, c.disk) : merge2(yours, c.disk)) : []), [c, yours]);
  useEffect(() => setChoices({}), [c]);
  if (!c) return null;
  const open = openConflicts(blocks, choices);
  const merged = mergedText(blocks, choices);
  const changes = blocks.filter((b) => b.kind === 'change');
  const run = async (what: 'disk' | 'mine' | 'merged') => {
    setBusy(true);
    try {
      await useYamlFile.getState().resolveConflict(what === 'merged' ? { merged: merged ?? '' } : what);
      toast(
        what === 'disk' ? `Loaded ${path} as it is on disk` : what === 'mine' ? 'Wrote your text over the file' : 'Wrote the merge to the file',
        'success',
      );
      void useApp.getState().loadWorkflows();
    } catch (e) {
      if (!(e instanceof ApiError && e.conflict)) toast(`Failed: ${errorMessage(e)}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  let line = 1;
  const items = blocks.map((b, i) => {
    const at = line;
    line += b.kind === 'same' ? b.lines.length : b.base.length;
    if (b.kind === 'same') {
      if (i === 0 || i === blocks.length - 1) return null;
      return (
        <li key={`s${i}`} className="merge-same sy-muted small">
          {b.lines.length} unchanged line{b.lines.length === 1 ? '' : 's'}
        </li>
      );
    }
    return (
      <Hunk key={`c${b.index}`} b={b} line={at} choice={choices[b.index] ?? b.proposed} pick={(x) => setChoices({ ...choices, [b.index]: x })} />
    );
  });
  const panes: Array<[string, string, string | undefined]> = [
    ['yours', 'Yours', yours],
    ['disk', 'On disk now', c.disk],
    ['base', 'What you started from', c.base],
  ];
  return (
    <div className="modal-backdrop" role="presentation">
      <div className="modal yaml-conflict" role="dialog" aria-modal="true" aria-labelledby="yaml-conflict-title" data-testid="yaml-conflict">
        <h2 id="yaml-conflict-title">{path || 'The file'} changed on disk</h2>
        <p className="sy-muted">
          Something else saved the file after you opened it, so your change was not written. Below is every change
          against the text you started from. Changes only one side made are kept; where both changed the same lines,
          pick which to keep.
        </p>
        <p className="merge-summary" data-testid="yaml-merge-summary">
          {changes.length} change{changes.length === 1 ? '' : 's'}
          {open > 0 ? `: ${open} to pick` : ': ready to write'}
        </p>
        <ol className="merge-hunks" data-testid="yaml-merge">
          {items}
        </ol>
        <details className="yaml-conflict__whole">
          <summary>The three whole texts</summary>
          <div className="yaml-conflict__panes">
            {panes.map(([id, label, text]) => (
              <section key={id} className="yaml-conflict__pane" aria-label={label}>
                <h3>{label}</h3>
                <pre className="code-block" data-testid={`yaml-conflict-${id}`}>
                  {text ?? '(no longer known to the server)'}
                </pre>
              </section>
            ))}
          </div>
        </details>
        <div className="modal__actions">
          <button className="btn" disabled={busy} onClick={() => useYamlFile.getState().dismissConflict()} data-testid="yaml-conflict-close">
            Keep editing
          </button>
          <button className="btn" disabled={busy} onClick={() => void run('disk')} data-testid="yaml-conflict-take-disk">
            Take disk
          </button>
          <button className="btn btn--danger" disabled={busy} onClick={() => void run('mine')} data-testid="yaml-conflict-keep-mine">
            Keep mine (overwrite)
          </button>
          <button
            className="btn btn--primary"
            disabled={busy || merged === null}
            title={merged === null ? `Pick a version for ${open} change${open === 1 ? '' : 's'} first` : undefined}
            onClick={() => void run('merged')}
            data-testid="yaml-conflict-save-merged"
          >
            Write merge
          </button>
        </div>
      </div>
    </div>
  );
}
