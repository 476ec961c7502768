import { useEffect } from 'react';
import { ApprovalsPage } from './components/ApprovalsPage';
import { EditorPage } from './components/EditorPage';
import { RunPage } from './components/RunPage';
import { RunsPage } from './components/RunsPage';
import { Header, ServerBanner, SignIn, Toasts } from './components/Shell';
import { ShortcutsHelp } from './components/Shortcuts';
import { useApp } from './store/app';
import { navigate, useRouter } from './store/router';

function NotFound({ path }: { path: string }) {
  return (
    <div className="center-msg" data-testid="not-found">
      <h2>Nothing at {path}</h2>
      <button className="btn" onClick={() => navigate('/')}>
        Go to the editor
      </button>
    </div>
  );
}

export function App() {
  const route = useRouter((s) => s.route);
  const needsLogin = useApp((s) => s.needsLogin);
  const server = useApp((s) => s.server);

  // While the server is unreachable, check again every 10 s.
  useEffect(() => {
    if (server !== 'unreachable') return;
    const t = setInterval(() => void useApp.getState().loadConfig(), 10_000);
    return () => clearInterval(t);
  }, [server]);
  // Coming back: reload what failed.
  useEffect(() => {
    if (server === 'ok') {
      const s = useApp.getState();
      if (!s.config) void s.loadConfig();
      if (!s.workflows) void s.loadWorkflows();
    }
  }, [server]);

  if (needsLogin) return <SignIn />;
  return (
    <div className="app">
      <a className="skip-link" href="#main-content">
        Skip to content
      </a>
      <Header />
      <ServerBanner />
      <div id="main-content" className="app__body">
        {route.name === 'editor' && <EditorPage id={route.id} />}
        {route.name === 'run' && <RunPage key={route.id} id={route.id} />}
        {route.name === 'approvals' && <ApprovalsPage />}
        {route.name === 'runs' && <RunsPage />}
        {route.name === 'notfound' && <NotFound path={route.path} />}
      </div>
      <Toasts />
      <ShortcutsHelp />
    </div>
  );
}
