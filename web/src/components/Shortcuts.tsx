// Keyboard: zoom keys on the canvases, and `?` for the list of shortcuts.
import { useReactFlow } from '@xyflow/react';
import { useEffect, useRef } from 'react';
import { create } from 'zustand';

/** Whether a key press belongs to a text field (then shortcuts keep out of it). */
export function isTypingTarget(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  if (!el || !el.tagName) return false;
  const tag = el.tagName;
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || el.isContentEditable;
}

/** + / = zoom in, - zoom out, 0 shows the whole graph (not while typing; Ctrl+± stays the browser's). */
export function useZoomKeys(fit: () => void, moved: () => void): void {
  const rf = useReactFlow();
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || isTypingTarget(e.target) || document.querySelector('[role="dialog"]')) return;
      if (e.key === '+' || e.key === '=') {
        e.preventDefault();
        moved();
        void rf.zoomIn({ duration: 150 });
      } else if (e.key === '-' || e.key === '_') {
        e.preventDefault();
        moved();
        void rf.zoomOut({ duration: 150 });
      } else if (e.key === '0') {
        e.preventDefault();
        fit();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [rf, fit, moved]);
}

export const useShortcutsHelp = create<{ open: boolean }>(() => ({ open: false }));

const SHORTCUTS: Array<[string, string]> = [
  ['?', 'This list'],
  ['Ctrl+S', 'Save (a YAML file: write typed text now)'],
  ['Ctrl+Z', 'Undo (a YAML file: the last write to it)'],
  ['Ctrl+Shift+Z, Ctrl+Y', 'Redo'],
  ['Ctrl+F', 'Find a node on the canvas (Enter: next, Shift+Enter: previous, Esc: close)'],
  ['+  −', 'Zoom in, zoom out'],
  ['0', 'Show the whole graph'],
  ['Delete, Backspace', 'Delete the selected nodes and edges (YAML: with Undo in the toast)'],
  ['Ctrl+C, Ctrl+V', 'Copy and paste nodes (drawn workflows)'],
  ['Ctrl+A', 'Select everything'],
  ['Tab, Enter, arrows', 'Focus a node, select it, move it'],
  ['↑ ↓ in the workflow list', 'Move between workflows (the list is one Tab stop)'],
  ['Enter, Ctrl+Enter', 'Write a step inspector field to the file (YAML)'],
  ['Esc', 'Close a dialog, the search, or put back a field'],
];

/** The `?` dialog listing the keyboard shortcuts. */
export function ShortcutsHelp() {
  const open = useShortcutsHelp((s) => s.open);
  const closeRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === '?' && !e.ctrlKey && !e.metaKey && !isTypingTarget(e.target)) {
        e.preventDefault();
        useShortcutsHelp.setState({ open: !useShortcutsHelp.getState().open });
      } else if (e.key === 'Escape' && useShortcutsHelp.getState().open) {
        useShortcutsHelp.setState({ open: false });
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  useEffect(() => {
    if (open) closeRef.current?.focus();
  }, [open]);
  if (!open) return null;
  const close = () => useShortcutsHelp.setState({ open: false });
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && close()}>
      <div className="modal shortcuts" role="dialog" aria-modal="true" aria-labelledby="shortcuts-title" data-testid="shortcuts-help">
        <div className="modal__head">
          <h2 id="shortcuts-title">Keyboard shortcuts</h2>
          <button ref={closeRef} className="icon-btn" onClick={close} aria-label="Close the shortcuts" data-testid="shortcuts-close">
            ×
          </button>
        </div>
        <dl className="shortcuts__list">
          {SHORTCUTS.map(([k, what]) => (
            <div key={k} className="shortcuts__row">
              <dt>
                <kbd>{k}</kbd>
              </dt>
              <dd>{what}</dd>
            </div>
          ))}
        </dl>
        <p className="sy-muted small">Cmd instead of Ctrl on a Mac. Shortcuts keep out of text fields, except Ctrl+S.</p>
      </div>
    </div>
  );
}
