import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resetEditorStore, useEditor } from '../store/editor';
import { createCommitter } from './commit';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('createCommitter (prompt text → store once per burst)', () => {
  it('commits once after the idle time, not per key', () => {
    let text = '';
    const commits: string[] = [];
    const c = createCommitter(() => text, (t) => commits.push(t), '', 250);
    for (const ch of 'hello') {
      text += ch;
      c.changed();
      vi.advanceTimersByTime(100);
    }
    expect(commits).toEqual([]);
    expect(c.pending()).toBe(true);
    vi.advanceTimersByTime(150);
    expect(commits).toEqual(['hello']);
    expect(c.pending()).toBe(false);
  });

  it('flush (blur, Ctrl+S) commits at once, and only a changed text', () => {
    let text = 'a';
    const commits: string[] = [];
    const c = createCommitter(() => text, (t) => commits.push(t), 'a', 250);
    expect(c.flush()).toBe(false);
    text = 'ab';
    c.changed();
    expect(c.flush()).toBe(true);
    vi.advanceTimersByTime(1000);
    expect(commits).toEqual(['ab']);
    // Typed and deleted again: nothing to write.
    text = 'abc';
    c.changed();
    text = 'ab';
    c.changed();
    vi.advanceTimersByTime(300);
    expect(commits).toEqual(['ab']);
  });

  it('an outside change (undo) drops what was pending', () => {
    let text = 'x';
    const commits: string[] = [];
    const c = createCommitter(() => text, (t) => commits.push(t), 'x', 250);
    text = 'xy';
    c.changed();
    c.reset('old');
    text = 'old';
    vi.advanceTimersByTime(300);
    expect(commits).toEqual([]);
    expect(c.committed()).toBe('old');
  });

  it('with the editor store: a burst is one revision and one undo step', () => {
    resetEditorStore();
    vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
    const st = useEditor.getState;
    st().newWorkflow();
    const id = st().addNode('agent', { x: 0, y: 0 });
    const pastBefore = st().history.past.length;
    let revs = 0;
    const unsub = useEditor.subscribe((s, prev) => {
      if (s.rev !== prev.rev) revs++;
    });
    let text = '';
    const c = createCommitter(() => text, (t) => st().updateNodeData(id, { userPrompt: t }, 'userPrompt'), '', 250);
    for (const ch of 'Summarise {{PREVIOUS_OUTPUT}}') {
      text += ch;
      c.changed();
      vi.advanceTimersByTime(30);
    }
    expect(revs).toBe(0); // nothing reached the store (canvas, validation) while typing
    vi.advanceTimersByTime(250);
    unsub();
    expect(revs).toBe(1);
    expect(st().nodes.find((n) => n.id === id)?.data.userPrompt).toBe('Summarise {{PREVIOUS_OUTPUT}}');
    expect(st().history.past.length).toBe(pastBefore + 1);
    st().undo();
    expect(st().nodes.find((n) => n.id === id)?.data.userPrompt).not.toBe('Summarise {{PREVIOUS_OUTPUT}}');
  });
});
