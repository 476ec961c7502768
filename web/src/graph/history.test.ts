import { describe, expect, it } from 'vitest';
import { COALESCE_MS, checkpoint, emptyHistory, redo, undo } from './history';

const snap = (v: string, rev: number) => ({ value: v, rev });

describe('history', () => {
  it('undoes and redoes in order', () => {
    let h = emptyHistory<string>();
    h = checkpoint(h, snap('a', 1), null, 0);
    h = checkpoint(h, snap('b', 2), null, 10);
    // present is c
    const u1 = undo(h, snap('c', 3))!;
    expect(u1.value).toEqual(snap('b', 2));
    const u2 = undo(u1.history, u1.value)!;
    expect(u2.value).toEqual(snap('a', 1));
    expect(undo(u2.history, u2.value)).toBeNull();
    const r1 = redo(u2.history, u2.value)!;
    expect(r1.value).toEqual(snap('b', 2));
    const r2 = redo(r1.history, r1.value)!;
    expect(r2.value).toEqual(snap('c', 3));
    expect(redo(r2.history, r2.value)).toBeNull();
  });

  it('a new change after undo clears the redo stack', () => {
    let h = checkpoint(emptyHistory<string>(), snap('a', 1), null, 0);
    const u = undo(h, snap('b', 2))!;
    h = checkpoint(u.history, u.value, null, 5);
    expect(h.future).toHaveLength(0);
  });

  it('coalesces same-key checkpoints within the window only', () => {
    let h = emptyHistory<string>();
    h = checkpoint(h, snap('a', 1), 'name', 0);
    h = checkpoint(h, snap('ab', 2), 'name', 100);
    h = checkpoint(h, snap('abc', 3), 'name', 200);
    expect(h.past).toHaveLength(1);
    h = checkpoint(h, snap('abcd', 4), 'name', 200 + COALESCE_MS + 1);
    expect(h.past).toHaveLength(2);
    h = checkpoint(h, snap('x', 5), 'other', 200 + COALESCE_MS + 2);
    expect(h.past).toHaveLength(3);
    h = checkpoint(h, snap('y', 6), null, 200 + COALESCE_MS + 3);
    h = checkpoint(h, snap('z', 7), null, 200 + COALESCE_MS + 4);
    expect(h.past).toHaveLength(5);
  });

  it('keeps at most the limit', () => {
    let h = emptyHistory<number>();
    for (let i = 0; i < 30; i++) h = checkpoint(h, { value: i, rev: i }, null, i, 10);
    expect(h.past).toHaveLength(10);
    expect(h.past[0]!.value).toBe(20);
  });
});
