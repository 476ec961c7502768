import { describe, expect, it } from 'vitest';
import { signInFromURL, splitToken } from './urlToken';

function fakeHistory() {
  const calls: Array<string | null | undefined> = [];
  return { calls, hist: { state: { k: 1 }, replaceState: (_d: unknown, _u: string, url?: string | null) => void calls.push(url) } };
}

describe('splitToken', () => {
  it('removes only the token and keeps the path, other parameters and the hash', () => {
    expect(splitToken('http://127.0.0.1:8080/runs/r1?a=1&token=abc-_XYZ&b=2#log')).toEqual({
      token: 'abc-_XYZ',
      rest: '/runs/r1?a=1&b=2#log',
      had: true,
    });
    expect(splitToken('http://127.0.0.1:8080/?token=t')).toEqual({ token: 't', rest: '/', had: true });
    expect(splitToken('http://127.0.0.1:8080/workflows/new')).toEqual({ token: '', rest: '/workflows/new', had: false });
  });
});

describe('signInFromURL', () => {
  it('trades the token for a session and takes it out of the address first', async () => {
    const { calls, hist } = fakeHistory();
    const order: string[] = [];
    const res = await signInFromURL({ href: 'http://h/?token=secret' }, hist, async (t) => {
      order.push(`login ${t} after ${calls.length} replace`);
    });
    expect(res).toBe('ok');
    expect(calls).toEqual(['/']);
    expect(order).toEqual(['login secret after 1 replace']);
  });

  it('does nothing without a token', async () => {
    const { calls, hist } = fakeHistory();
    let called = false;
    const res = await signInFromURL({ href: 'http://h/runs?status=paused' }, hist, async () => {
      called = true;
    });
    expect(res).toBe('none');
    expect(calls).toEqual([]);
    expect(called).toBe(false);
  });

  it('reports a refused token and still removes it from the address', async () => {
    const { calls, hist } = fakeHistory();
    const res = await signInFromURL({ href: 'http://h/approvals?token=old' }, hist, async () => {
      throw new Error('That token was not accepted.');
    });
    expect(res).toBe('refused');
    expect(calls).toEqual(['/approvals']);
  });

  it('drops an empty token parameter without signing in', async () => {
    const { calls, hist } = fakeHistory();
    let called = false;
    const res = await signInFromURL({ href: 'http://h/?token=' }, hist, async () => {
      called = true;
    });
    expect(res).toBe('none');
    expect(calls).toEqual(['/']);
    expect(called).toBe(false);
  });
});
