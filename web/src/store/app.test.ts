import { describe, expect, it } from 'vitest';
import { useApp } from './app';
import { parseRoute, useRouter } from './router';

const go = (path: string) => useRouter.setState({ path, route: parseRoute(path) });

describe('toasts', () => {
  it('belong to the page they were raised on: the editor\'s "Saved" does not follow onto the run page', () => {
    go('/workflows/new');
    useApp.getState().toast('Saved', 'success');
    // Saving a new workflow moves to its id: still the editor, the toast stays.
    go('/workflows/w1');
    expect(useApp.getState().toasts.map((t) => t.message)).toEqual(['Saved']);
    go('/runs/r1');
    expect(useApp.getState().toasts).toEqual([]);
    useApp.getState().toast('Approved', 'success');
    expect(useApp.getState().toasts.map((t) => t.message)).toEqual(['Approved']);
    go('/workflows/w1');
    expect(useApp.getState().toasts).toEqual([]);
  });
});
