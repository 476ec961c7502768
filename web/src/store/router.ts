import { create } from 'zustand';

export type Route =
  | { name: 'editor'; id: string | null }
  | { name: 'run'; id: string }
  | { name: 'approvals' }
  | { name: 'runs' }
  | { name: 'notfound'; path: string };

export function parseRoute(path: string): Route {
  const p = path.split(/[?#]/)[0]!.replace(/\/+$/, '') || '/';
  if (p === '/' || p === '/workflows' || p === '/workflows/new') return { name: 'editor', id: null };
  if (p === '/approvals') return { name: 'approvals' };
  if (p === '/runs') return { name: 'runs' };
  let m = /^\/workflows\/([^/]+)$/.exec(p);
  if (m) return { name: 'editor', id: decodeURIComponent(m[1]!) };
  m = /^\/runs\/([^/]+)$/.exec(p);
  if (m) return { name: 'run', id: decodeURIComponent(m[1]!) };
  return { name: 'notfound', path };
}

export function workflowPath(id: string | null): string {
  return id ? `/workflows/${encodeURIComponent(id)}` : '/workflows/new';
}
export function runPath(id: string): string {
  return `/runs/${encodeURIComponent(id)}`;
}

/** `path` is the address without its query; `search` the query (with its "?", or ""). */
type RouterState = { path: string; search: string; route: Route };

const initial = typeof location !== 'undefined' ? location.pathname : '/';
const initialSearch = typeof location !== 'undefined' ? location.search : '';
export const useRouter = create<RouterState>(() => ({ path: initial, search: initialSearch, route: parseRoute(initial) }));

/** The query of a path ("?a=b", or ""). */
function searchOf(path: string): string {
  const i = path.indexOf('?');
  return i < 0 ? '' : path.slice(i);
}
function pathOf(path: string): string {
  const i = path.indexOf('?');
  return i < 0 ? path : path.slice(0, i);
}

/**
 * Changes the query of the current page (filters that belong in the
 * address: shareable, kept by a reload and by Back), without a navigation:
 * the page stays, the history entry is replaced. Empty values are dropped.
 */
export function setQuery(params: Record<string, string>): void {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const search = q.toString() ? `?${q.toString()}` : '';
  const s = useRouter.getState();
  if (search === s.search) return;
  history.replaceState(null, '', s.path + search);
  useRouter.setState({ search });
}

/** One parameter of the current query. */
export function queryParam(search: string, name: string): string {
  return new URLSearchParams(search).get(name) ?? '';
}

/** Returns false to veto leaving the current page (unsaved changes). */
type Guard = (to: Route) => boolean;
let guard: Guard | null = null;
export function setNavigationGuard(g: Guard | null): void {
  guard = g;
}

export function navigate(path: string, opts: { replace?: boolean; force?: boolean } = {}): boolean {
  const to = parseRoute(path);
  const cur = useRouter.getState();
  if (pathOf(path) === cur.path && searchOf(path) === cur.search) return true;
  if (pathOf(path) !== cur.path && !opts.force && guard && !guard(to)) return false;
  if (opts.replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  useRouter.setState({ path: pathOf(path), search: searchOf(path), route: to });
  return true;
}

let lastPath = initial;
export function startRouter(): () => void {
  // The address as it is now (the sign-in removed its ?token= before this).
  useRouter.setState({ path: location.pathname, search: location.search, route: parseRoute(location.pathname) });
  const onPop = () => {
    const path = location.pathname;
    const to = parseRoute(path);
    if (guard && !guard(to)) {
      // Put the URL back; the user chose to stay.
      history.pushState(null, '', lastPath);
      return;
    }
    lastPath = path;
    useRouter.setState({ path, search: location.search, route: to });
  };
  const unsub = useRouter.subscribe((s) => (lastPath = s.path));
  window.addEventListener('popstate', onPop);
  return () => {
    window.removeEventListener('popstate', onPop);
    unsub();
  };
}
