import { create } from 'zustand';

export type Route =
  | { name: 'editor'; id: string | null }
  | { name: 'run'; id: string }
  | { name: 'approvals' }
  | { name: 'runs' }
  | { name: 'notfound'; path: string };

export function parseRoute(path: string): Route {
  const p = path.replace(/\/+$/, '') || '/';
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

type RouterState = { path: string; route: Route };

const initial = typeof location !== 'undefined' ? location.pathname : '/';
export const useRouter = create<RouterState>(() => ({ path: initial, route: parseRoute(initial) }));

/** Returns false to veto leaving the current page (unsaved changes). */
type Guard = (to: Route) => boolean;
let guard: Guard | null = null;
export function setNavigationGuard(g: Guard | null): void {
  guard = g;
}

export function navigate(path: string, opts: { replace?: boolean; force?: boolean } = {}): boolean {
  const to = parseRoute(path);
  if (path === useRouter.getState().path) return true;
  if (!opts.force && guard && !guard(to)) return false;
  if (opts.replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  useRouter.setState({ path, route: to });
  return true;
}

let lastPath = initial;
export function startRouter(): () => void {
  const onPop = () => {
    const path = location.pathname;
    const to = parseRoute(path);
    if (guard && !guard(to)) {
      // Put the URL back; the user chose to stay.
      history.pushState(null, '', lastPath);
      return;
    }
    lastPath = path;
    useRouter.setState({ path, route: to });
  };
  const unsub = useRouter.subscribe((s) => (lastPath = s.path));
  window.addEventListener('popstate', onPop);
  return () => {
    window.removeEventListener('popstate', onPop);
    unsub();
  };
}
