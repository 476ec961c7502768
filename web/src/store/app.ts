import { create } from 'zustand';
import { api, errorMessage, setApiListener, type ApiError } from '../api/client';
import type { AppConfig, RunStatusMessage, WorkflowSummary } from '../api/types';
import { useRouter } from './router';
import { yamlTags } from '../editor/find';

export type ServerStatus = 'unknown' | 'ok' | 'unreachable';
export type Theme = 'system' | 'light' | 'dark';
/** `page` is the kind of page the toast was raised on; it goes when the user leaves that page. */
export type Toast = { id: number; kind: 'info' | 'error' | 'success'; message: string; page: string; action?: ToastAction };
/** A button on a toast (e.g. Undo); pressing it runs `run` and dismisses the toast. */
export type ToastAction = { label: string; run: () => void };
/** How long toasts stay: errors and toasts with a button longer. */
export const TOAST_MS = { plain: 4000, long: 10_000 };

type AppState = {
  server: ServerStatus;
  serverDetail: string;
  needsLogin: boolean;
  /** Why the sign-in page shows, when the UI knows (a refused ?token=). */
  signInNote: string | null;
  config: AppConfig | null;
  workflows: WorkflowSummary[] | null;
  workflowsError: string | null;
  /** YAML workflows' tags (read from their text on demand, for search), with the updatedAt they are of. */
  workflowTags: Record<string, { updatedAt: string; tags: string[] }>;
  theme: Theme;
  toasts: Toast[];
  toastSeq: number;
  /** Latest status per run id from GET /api/ws. */
  runStatus: Record<string, RunStatusMessage>;
  loadConfig: () => Promise<void>;
  loadWorkflows: () => Promise<void>;
  /** Reads the tags of listed YAML workflows not read yet (or changed since). */
  loadTags: () => Promise<void>;
  setTheme: (t: Theme) => void;
  toast: (message: string, kind?: Toast['kind'], o?: { action?: ToastAction }) => void;
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

export const useApp = create<AppState>((set, get) => ({
  server: 'unknown',
  serverDetail: '',
  needsLogin: false,
  signInNote: null,
  config: null,
  workflows: null,
  workflowsError: null,
  workflowTags: {},
  toastSeq: 0,
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
  loadTags: async () => {
    const list = get().workflows ?? [];
    const stale = list.filter((w) => w.kind === 'yaml' && get().workflowTags[w.id]?.updatedAt !== w.updatedAt);
    for (const w of stale) {
      try {
        const full = await api.getWorkflow(w.id);
        set({ workflowTags: { ...get().workflowTags, [w.id]: { updatedAt: w.updatedAt, tags: yamlTags(full.source ?? '') } } });
      } catch {
        /* not readable now: searched without its tags */
      }
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
  toast: (message, kind = 'info', o = {}) => {
    const id = get().toastSeq + 1;
    const page = useRouter.getState().route.name;
    const t: Toast = { id, kind, message, page, ...(o.action ? { action: o.action } : {}) };
    set({ toastSeq: id, toasts: [...get().toasts.slice(-3), t] });
    setTimeout(() => get().dismissToast(id), kind === 'error' || o.action ? TOAST_MS.long : TOAST_MS.plain);
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
