/**
 * Writes an editor's text to the store once per burst of typing: `changed()`
 * on every edit (re)starts an idle timer; `flush()` (blur, Ctrl+S, unmount,
 * or the timer) commits the text if it differs from the last committed one.
 */
export type Committer = {
  /** An edit happened: commit after `idleMs` without further edits. */
  changed: () => void;
  /** Commit now if the text changed; returns whether it committed. */
  flush: () => boolean;
  /** The store holds `value` now (an outside change): nothing pending. */
  reset: (value: string) => void;
  /** The text last written to (or read from) the store. */
  committed: () => string;
  pending: () => boolean;
  dispose: () => void;
};

export function createCommitter(read: () => string, commit: (text: string) => void, initial: string, idleMs: number): Committer {
  let last = initial;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const stop = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  const flush = () => {
    stop();
    const text = read();
    if (text === last) return false;
    last = text;
    commit(text);
    return true;
  };
  return {
    changed: () => {
      stop();
      timer = setTimeout(flush, idleMs);
    },
    flush,
    reset: (value) => {
      stop();
      last = value;
    },
    committed: () => last,
    pending: () => timer !== null,
    dispose: stop,
  };
}
