import { useState, type FormEvent } from 'react';
import { api, errorMessage } from '../api/client';
import { useApp, type Theme } from '../store/app';
import { useInbox } from '../store/inbox';
import { navigate, useRouter } from '../store/router';
import { useShortcutsHelp } from './Shortcuts';

const NEXT_THEME: Record<Theme, Theme> = { system: 'light', light: 'dark', dark: 'system' };
const THEME_TEXT: Record<Theme, string> = { system: 'Theme: system', light: 'Theme: light', dark: 'Theme: dark' };

export function Header() {
  const theme = useApp((s) => s.theme);
  const setTheme = useApp((s) => s.setTheme);
  const server = useApp((s) => s.server);
  const llm = useApp((s) => s.config?.llmConfigured);
  return (
    <header className="header">
      <a
        href="/"
        className="brand"
        onClick={(e) => {
          e.preventDefault();
          navigate('/');
        }}
      >
        <span className="brand__mark" aria-hidden="true" />
        Switchyard
      </a>
      <span className="header__spacer" />
      <RunsLink />
      <ApprovalsLink />
      {server === 'ok' && llm === false && (
        <span className="pill pill--warning" title="Agent nodes will fail until the server has an LLM provider configured">
          No LLM configured
        </span>
      )}
      <span className={`pill pill--server-${server}`} data-testid="server-status" role="status">
        {server === 'ok' ? 'Connected' : server === 'unreachable' ? 'Server unreachable' : 'Connecting…'}
      </span>
      <button
        className="btn btn--small"
        onClick={() => useShortcutsHelp.setState({ open: true })}
        aria-label="Keyboard shortcuts"
        title="Keyboard shortcuts (?)"
        data-testid="help-button"
      >
        ?
      </button>
      <button
        className="btn btn--small"
        onClick={() => setTheme(NEXT_THEME[theme])}
        aria-label={`${THEME_TEXT[theme]}. Switch theme`}
        title="Switch between system, light and dark"
        data-testid="theme-toggle"
      >
        {theme === 'dark' ? '☾' : theme === 'light' ? '☀' : '◐'} {theme}
      </button>
    </header>
  );
}

function RunsLink() {
  const here = useRouter((s) => s.route.name === 'runs');
  return (
    <a
      href="/runs"
      className={`header__link${here ? ' is-current' : ''}`}
      aria-current={here ? 'page' : undefined}
      onClick={(e) => {
        e.preventDefault();
        navigate('/runs');
      }}
      data-testid="runs-link"
    >
      Runs
    </a>
  );
}

function ApprovalsLink() {
  const count = useInbox((s) => s.items?.length ?? 0);
  const here = useRouter((s) => s.route.name === 'approvals');
  return (
    <a
      href="/approvals"
      className={`header__link${here ? ' is-current' : ''}`}
      aria-current={here ? 'page' : undefined}
      aria-label={count > 0 ? `Approvals: ${count} waiting` : 'Approvals: none waiting'}
      onClick={(e) => {
        e.preventDefault();
        navigate('/approvals');
      }}
      data-testid="approvals-link"
    >
      Approvals
      <span className={`count-badge${count > 0 ? ' count-badge--on' : ''}`} data-testid="approvals-count">
        {count}
      </span>
    </a>
  );
}

export function ServerBanner() {
  const server = useApp((s) => s.server);
  const detail = useApp((s) => s.serverDetail);
  if (server !== 'unreachable') return null;
  const retry = () => {
    void useApp.getState().loadConfig();
    void useApp.getState().loadWorkflows();
  };
  return (
    <div className="banner banner--error" role="alert" data-testid="server-unreachable">
      <div className="banner__msg">
        <strong>Server unreachable.</strong> The Switchyard API at <code>/api</code> did not answer ({detail}). You can
        still draw a workflow here and export it; saving, validation and runs come back when the server does.
      </div>
      <div className="banner__actions">
        <button className="btn btn--small" onClick={retry} data-testid="retry-server">
          Retry now
        </button>
      </div>
    </div>
  );
}

export function Toasts() {
  const toasts = useApp((s) => s.toasts);
  const dismiss = useApp((s) => s.dismissToast);
  return (
    <div className="toasts" role="status" aria-live="polite" data-testid="toasts">
      {toasts.map((t) => (
        <div key={t.id} className={`toast toast--${t.kind}`} data-testid="toast">
          <span className="toast__msg">{t.message}</span>
          {t.action && (
            <button
              className="btn btn--small toast__action"
              onClick={() => {
                dismiss(t.id);
                t.action!.run();
              }}
              data-testid="toast-action"
            >
              {t.action.label}
            </button>
          )}
          <button className="icon-btn" aria-label="Dismiss" onClick={() => dismiss(t.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}

export function SignIn() {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(() => useApp.getState().signInNote);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api.login(token);
      // Fresh start so every view loads with the new session.
      location.reload();
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };
  return (
    <main className="signin" data-testid="signin">
      <form className="signin__card" onSubmit={(e) => void submit(e)}>
        <h1>
          <span className="brand__mark" aria-hidden="true" /> Switchyard
        </h1>
        <p>This server needs an access token.</p>
        <p className="signin__hint">
          Open the address <code>switchyard serve</code> printed when it started (it ends in <code>?token=…</code>), or
          paste the token here.
        </p>
        <label className="field">
          <span>Access token</span>
          <input
            type="password"
            autoComplete="current-password"
            value={token}
            onChange={(e) => setToken(e.target.value)}
            required
            autoFocus
            data-testid="signin-token"
          />
        </label>
        {error && (
          <p className="problem problem--error" role="alert">
            {error}
          </p>
        )}
        <button className="btn btn--primary" type="submit" disabled={busy || !token} data-testid="signin-submit">
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
