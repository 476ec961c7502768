import { create } from 'zustand';

/** Ctrl+F on a canvas: the query, the nodes it matches (best first) and the one shown. */
type CanvasSearchState = {
  open: boolean;
  query: string;
  matches: string[];
  index: number;
  show: () => void;
  close: () => void;
  /** A new query and its matches; the first match becomes the current one. */
  setResults: (query: string, matches: string[]) => void;
  /** The next (+1) or previous (-1) match, wrapping around. */
  step: (dir: 1 | -1) => void;
};

export const useCanvasSearch = create<CanvasSearchState>((set, get) => ({
  open: false,
  query: '',
  matches: [],
  index: 0,
  show: () => set({ open: true }),
  close: () => set({ open: false, query: '', matches: [], index: 0 }),
  setResults: (query, matches) => set({ query, matches, index: 0 }),
  step: (dir) => {
    const n = get().matches.length;
    if (n === 0) return;
    set({ index: (get().index + dir + n) % n });
  },
}));

/** How a node stands in the search: 'current', 'match' or '' (no search, or not matched). */
export function useSearchMark(id: string): '' | 'match' | 'current' {
  return useCanvasSearch((s) => (!s.open || s.matches.length === 0 ? '' : s.matches[s.index] === id ? 'current' : s.matches.includes(id) ? 'match' : ''));
}
