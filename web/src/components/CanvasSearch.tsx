// Ctrl+F on a canvas: finds nodes by id, name, kind or text, highlights
// them, and jumps from one to the next (Enter / Shift+Enter), selecting it.
import { useReactFlow } from '@xyflow/react';
import { useEffect, useRef } from 'react';
import { findNodes, type SearchableNode } from '../editor/find';
import { useCanvasSearch } from '../store/canvasSearch';

type Node = SearchableNode & { position: { x: number; y: number }; measured?: { width?: number; height?: number } };

export function CanvasSearch({ nodes, onPick }: { nodes: readonly Node[]; onPick: (id: string) => void }) {
  const s = useCanvasSearch();
  const rf = useReactFlow();
  const input = useRef<HTMLInputElement>(null);
  // Ctrl/Cmd+F opens it (not inside the YAML text, which keeps the browser's find).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (!(e.ctrlKey || e.metaKey) || e.key.toLowerCase() !== 'f' || e.shiftKey || e.altKey) return;
      const t = e.target as HTMLElement | null;
      if (t?.closest?.('[data-testid="yaml-text-editor"]')) return;
      e.preventDefault();
      useCanvasSearch.getState().show();
      requestAnimationFrame(() => input.current?.select());
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  // Leaving the page (this canvas) ends the search.
  useEffect(() => () => useCanvasSearch.getState().close(), []);
  // The results follow the graph as it changes.
  useEffect(() => {
    if (!s.open) return;
    const m = findNodes(nodes, s.query);
    if (m.join('\u0000') !== s.matches.join('\u0000')) useCanvasSearch.setState({ matches: m, index: Math.min(s.index, Math.max(0, m.length - 1)) });
  }, [nodes]);
  const current = s.open ? s.matches[s.index] : undefined;
  useEffect(() => {
    if (!current) return;
    const n = nodes.find((x) => x.id === current);
    if (!n) return;
    onPick(current);
    const w = n.measured?.width ?? 220;
    const h = n.measured?.height ?? 90;
    void rf.setCenter(n.position.x + w / 2, n.position.y + h / 2, { zoom: Math.max(rf.getZoom(), 0.9), duration: 250 });
    // Only when the current match changes (not on every graph change).
  }, [current, s.index]);
  if (!s.open) return null;
  const count = s.query.trim() ? (s.matches.length ? `${s.index + 1} of ${s.matches.length}` : 'no match') : '';
  return (
    <div className="canvas-search nodrag nopan" role="search" data-testid="canvas-search">
      <input
        ref={input}
        autoFocus
        type="search"
        value={s.query}
        placeholder="Find a node: name, id, text"
        aria-label="Find a node on the canvas"
        onChange={(e) => s.setResults(e.target.value, findNodes(nodes, e.target.value))}
        onKeyDown={(e) => {
          if (e.key === 'Enter') {
            e.preventDefault();
            s.step(e.shiftKey ? -1 : 1);
          } else if (e.key === 'Escape') {
            e.preventDefault();
            s.close();
          }
        }}
        data-testid="canvas-search-input"
      />
      <span className={`canvas-search__count${count === 'no match' ? ' is-none' : ''}`} role="status" data-testid="canvas-search-count">
        {count}
      </span>
      <button className="icon-btn" onClick={() => s.step(-1)} disabled={s.matches.length < 2} aria-label="Previous match" title="Previous (Shift+Enter)">
        ↑
      </button>
      <button className="icon-btn" onClick={() => s.step(1)} disabled={s.matches.length < 2} aria-label="Next match" title="Next (Enter)">
        ↓
      </button>
      <button className="icon-btn" onClick={s.close} aria-label="Close the search" title="Close (Esc)" data-testid="canvas-search-close">
        ×
      </button>
    </div>
  );
}
