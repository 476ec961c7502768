import { create } from 'zustand';
import { api, errorMessage, setApiListener, type ApiError } from '../api/client';
import type { AppConfig, RunStatusMessage, WorkflowSummary } from '../api/types';
import { useRouter } from './router';

export type ServerStatus = 'unknown' | 'ok' | 'unreachable';
export type Theme = 'system' | 'light' | 'dark';
/** `page` is the kind of page the toast was raised on; it goes when the user leaves that page. */
export type Toast = { id: number; kind: 'info' | 'error' | 'success'; message: string; page: string };

type AppState = {
  server: ServerStatus;
  serverDetail: string;
  needsLogin: boolean;
  /** Why the sign-in page shows, when the UI knows (a refused ?token=). */
  signInNote: string | null;
  config: AppConfig | null;
  workflows: WorkflowSummary[] | null;
  workflowsError: string | null;
  theme: Theme;
  toasts: Toast[];
  /** Latest status per run id from GET /api/ws. */
  runStatus: Record<string, RunStatusMessage>;
  loadConfig: () => Promise<void>;
  loadWorkflows: () => Promise<void>;
  setTheme: (t: Theme) => void;
  toast: (message: string, kind?: Toast['kind']) => void;
  dismissToast: (id: number) => void;
  signedIn: () => void;
  noteRunStatus: (m: RunStatusMessage) => void;
};

const THEME_KEY = 'switchyard.theme';

function storedTheme(): Theme {
  try {
    const t = localStorage.getItem(THEME_KEY);
    return t === 'light' || t === 'dark' ? t : 'system';
  } catch {
    return 'system';
  }
}

export function applyTheme(t: Theme): void {
  const root = document.documentElement;
  if (t === 'system') root.removeAttribute('data-theme');
  else root.setAttribute('data-theme', t);
}

let toastSeq = 0;

export const useApp = create<AppState>((set, get) => ({
  server: 'unknown',
  serverDetail: '',
  needsLogin: false,
  signInNote: null,
  config: null,
  workflows: null,
  workflowsError: null,
  theme: typeof localStorage !== 'undefined' ? storedTheme() : 'system',
  toasts: [],
  runStatus: {},
  loadConfig: async () => {
    try {
      const config = await api.config();
      set({ config });
    } catch {
      /* the banner reports it */
    }
  },
  loadWorkflows: async () => {
    try {
      const workflows = await api.listWorkflows();
      set({ workflows: Array.isArray(workflows) ? workflows : [], workflowsError: null });
    } catch (e) {
      set({ workflowsError: errorMessage(e) });
    }
  },
  setTheme: (theme) => {
    try {
      if (theme === 'system') localStorage.removeItem(THEME_KEY);
      else localStorage.setItem(THEME_KEY, theme);
    } catch {
      /* private mode */
    }
    applyTheme(theme);
    set({ theme });
  },
  toast: (message, kind = 'info') => {
    const id = ++toastSeq;
    const page = useRouter.getState().route.name;
    set({ toasts: [...get().toasts.slice(-3), { id, kind, message, page }] });
    setTimeout(() => get().dismissToast(id), kind === 'error' ? 8000 : 4000);
  },
  dismissToast: (id) => set({ toasts: get().toasts.filter((t) => t.id !== id) }),
  signedIn: () => {
    set({ needsLogin: false });
    void get().loadConfig();
    void get().loadWorkflows();
  },
  noteRunStatus: (m) => set({ runStatus: { ...get().runStatus, [m.runId]: m } }),
}));

setApiListener({
  onReachable: () => {
    if (useApp.getState().server !== 'ok') useApp.setState({ server: 'ok', serverDetail: '' });
  },
  onUnreachable: (err: ApiError) => useApp.setState({ server: 'unreachable', serverDetail: err.message }),
  onUnauthorized: () => useApp.setState({ needsLogin: true }),
});

// Toasts belong to the page they were raised on: "Saved" in the editor must
// not follow the user onto the run page.
useRouter.subscribe((r, prev) => {
  if (r.route.name === prev.route.name) return;
  const { toasts } = useApp.getState();
  const kept = toasts.filter((t) => t.page === r.route.name);
  if (kept.length !== toasts.length) useApp.setState({ toasts: kept });
});
