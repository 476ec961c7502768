/**
 * `switchyard serve` prints the address to open with the token it made
 * (`http://127.0.0.1:8080/?token=…`), as Jupyter does. On load the UI takes
 * the token out of the address bar and the history entry at once
 * (history.replaceState, before anything else can read or record the
 * address), then trades it for its HttpOnly session cookie (POST /login).
 * The token is never stored by the page.
 */

export type UrlSignIn = 'none' | 'ok' | 'refused';

type Loc = { href: string };
type Hist = { state: unknown; replaceState(data: unknown, unused: string, url?: string | null): void };

/** Returns the URL `href` without its `token` parameter, and the token ('' when absent). */
export function splitToken(href: string): { token: string; rest: string; had: boolean } {
  const url = new URL(href);
  const had = url.searchParams.has('token');
  const token = url.searchParams.get('token') ?? '';
  url.searchParams.delete('token');
  return { token, rest: url.pathname + url.search + url.hash, had };
}

/**
 * Signs in with a `?token=` in the address, if there is one: 'none' when
 * there is none, 'ok' once the session cookie is set, 'refused' when the
 * server did not take it (the sign-in page then says so).
 */
export async function signInFromURL(loc: Loc, hist: Hist, login: (token: string) => Promise<void>): Promise<UrlSignIn> {
  const { token, rest, had } = splitToken(loc.href);
  if (!had) return 'none';
  hist.replaceState(hist.state, '', rest);
  if (!token) return 'none';
  try {
    await login(token);
    return 'ok';
  } catch {
    return 'refused';
  }
}
