/**
 * Undo/redo as a pure structure. Snapshots are whole values (the node and
 * edge arrays, which share unchanged objects), tagged with the revision they
 * had so undoing back to the saved revision clears the dirty flag.
 */
export type Snapshot<T> = { value: T; rev: number };

export type History<T> = {
  past: Snapshot<T>[];
  future: Snapshot<T>[];
  /** Coalescing key and time of the last recorded checkpoint. */
  lastKey: string | null;
  lastAt: number;
};

export const HISTORY_LIMIT = 100;
export const COALESCE_MS = 1200;

export function emptyHistory<T>(): History<T> {
  return { past: [], future: [], lastKey: null, lastAt: 0 };
}

/**
 * Records `present` as an undo point before a change. Consecutive changes
 * with the same non-null key inside COALESCE_MS collapse into one step (typing
 * in a field is one undo step, not one per key).
 */
export function checkpoint<T>(
  h: History<T>,
  present: Snapshot<T>,
  key: string | null,
  now: number,
  limit = HISTORY_LIMIT,
): History<T> {
  if (key !== null && key === h.lastKey && now - h.lastAt < COALESCE_MS && h.past.length > 0) {
    return { ...h, lastAt: now, future: [] };
  }
  const past = h.past.length >= limit ? h.past.slice(h.past.length - limit + 1) : h.past.slice();
  past.push(present);
  return { past, future: [], lastKey: key, lastAt: now };
}

export function canUndo<T>(h: History<T>): boolean {
  return h.past.length > 0;
}
export function canRedo<T>(h: History<T>): boolean {
  return h.future.length > 0;
}

export function undo<T>(h: History<T>, present: Snapshot<T>): { history: History<T>; value: Snapshot<T> } | null {
  const prev = h.past[h.past.length - 1];
  if (!prev) return null;
  return {
    history: { past: h.past.slice(0, -1), future: [...h.future, present], lastKey: null, lastAt: 0 },
    value: prev,
  };
}

export function redo<T>(h: History<T>, present: Snapshot<T>): { history: History<T>; value: Snapshot<T> } | null {
  const next = h.future[h.future.length - 1];
  if (!next) return null;
  return {
    history: { past: [...h.past, present], future: h.future.slice(0, -1), lastKey: null, lastAt: 0 },
    value: next,
  };
}
