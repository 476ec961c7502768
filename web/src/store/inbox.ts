import { create } from 'zustand';
import { api, errorMessage } from '../api/client';
import type { Approval } from '../api/types';
import { toCanvas } from '../graph/canvas';
import { approvalName, lastRejection } from '../graph/checks';

/**
 * Identifies one wait: a node asked again (after a reject loop) is a new
 * one, and so is each tool call an agent waits on (a node may wait on
 * several calls of one turn in a row).
 */
export function approvalKey(a: Approval): string {
  const k = `${a.runId}/${a.nodeId}/${a.since}`;
  return a.tool ? `${k}/${a.tool.callId}` : k;
}

/** A notification's title and text for a new approval. */
export function approvalNotice(a: Approval): { title: string; body: string } {
  if (a.tool) return { title: `Tool call needs approval: ${a.workflowName}`, body: `${a.nodeId}: ${a.prompt || `Allow ${a.tool.tool}?`}` };
  return { title: `Approval needed: ${a.workflowName}`, body: a.prompt ? `${a.nodeId}: ${a.prompt}` : a.nodeId };
}

/** The approvals in `next` that were not in `prev` (none on the first load). */
export function arrived(prev: Approval[] | null, next: Approval[]): Approval[] {
  if (prev === null) return [];
  const seen = new Set(prev.map(approvalKey));
  return next.filter((a) => !seen.has(approvalKey(a)));
}

const NOTIFY_KEY = 'switchyard.notify';

function storedNotify(): boolean {
  try {
    return localStorage.getItem(NOTIFY_KEY) === 'on';
  } catch {
    return false;
  }
}

type NotifySupport = 'unsupported' | 'default' | 'granted' | 'denied';

function notifySupport(): NotifySupport {
  if (typeof Notification === 'undefined') return 'unsupported';
  return Notification.permission;
}

type InboxState = {
  /** Waiting approvals, longest waiting first; null until first loaded. */
  items: Approval[] | null;
  error: string | null;
  /** Browser notifications for new approvals (opt-in, remembered). */
  notify: boolean;
  permission: NotifySupport;
  busy: Record<string, boolean>;
  refresh: () => Promise<void>;
  /** Refresh soon, once, however many times it is called meanwhile. */
  refreshSoon: () => void;
  setNotify: (on: boolean) => Promise<void>;
  decide: (a: Approval, decision: 'approve' | 'reject', note: string) => Promise<void>;
  /** Per wait: the node's name as its canvas shows it, and the note of its last rejection (read from the run). */
  details: Record<string, { name: string; previous: string | null }>;
  loadDetails: (a: Approval) => Promise<void>;
};

let soon: ReturnType<typeof setTimeout> | null = null;
let inflight: Promise<void> | null = null;
let again = false;

function announce(list: Approval[]): void {
  for (const a of list) {
    try {
      const { title, body } = approvalNotice(a);
      const n = new Notification(title, { body, tag: approvalKey(a) });
      n.onclick = () => {
        window.focus();
        window.history.pushState(null, '', '/approvals');
        window.dispatchEvent(new PopStateEvent('popstate'));
        n.close();
      };
    } catch {
      /* notifications can throw (e.g. only allowed from a service worker) */
    }
  }
}

export const useInbox = create<InboxState>((set, get) => ({
  items: null,
  error: null,
  notify: storedNotify(),
  permission: notifySupport(),
  busy: {},
  details: {},
  loadDetails: async (a) => {
    const key = approvalKey(a);
    if (get().details[key]) return;
    try {
      const [run, events] = await Promise.all([api.getRun(a.runId), a.tool ? Promise.resolve([]) : api.getEvents(a.runId, 0)]);
      const { nodes, edges } = toCanvas(run.graph ?? { nodes: [], edges: [] });
      set({ details: { ...get().details, [key]: { name: approvalName(nodes, edges, a.nodeId), previous: lastRejection(events, a.nodeId) } } });
    } catch {
      /* the item shows the node id */
    }
  },
  refresh: () => {
    // One request at a time; a call meanwhile asks for one more after it.
    if (inflight) {
      again = true;
      return inflight;
    }
    inflight = (async () => {
      try {
        const next = await api.approvals();
        const { items, notify } = get();
        const fresh = arrived(items, next);
        set({ items: next, error: null });
        if (notify && fresh.length > 0 && notifySupport() === 'granted') announce(fresh);
      } catch (e) {
        set({ error: errorMessage(e) });
      } finally {
        inflight = null;
        if (again) {
          again = false;
          void get().refresh();
        }
      }
    })();
    return inflight;
  },
  refreshSoon: () => {
    if (soon) return;
    soon = setTimeout(() => {
      soon = null;
      void get().refresh();
    }, 250);
  },
  setNotify: async (on) => {
    if (on && notifySupport() === 'default') {
      try {
        await Notification.requestPermission();
      } catch {
        /* older browsers: callback form only; treat as not granted */
      }
    }
    const permission = notifySupport();
    const enabled = on && permission === 'granted';
    try {
      localStorage.setItem(NOTIFY_KEY, enabled ? 'on' : 'off');
    } catch {
      /* private mode */
    }
    set({ notify: enabled, permission });
  },
  decide: async (a, decision, note) => {
    const key = approvalKey(a);
    set({ busy: { ...get().busy, [key]: true } });
    try {
      await api.decide(a.runId, a.nodeId, decision, note);
      // Gone at once here; the refresh confirms it.
      const items = get().items;
      if (items) set({ items: items.filter((x) => approvalKey(x) !== key) });
    } finally {
      const { [key]: _, ...rest } = get().busy;
      set({ busy: rest });
      void get().refresh();
    }
  },
}));
