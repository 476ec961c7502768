import '@xyflow/react/dist/style.css';
import './styles.css';
import './editor.css';
import './fork.css';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { api } from './api/client';
import { openStatusStream } from './api/statusStream';
import { signInFromURL } from './api/urlToken';
import { App } from './App';
import { applyTheme, useApp } from './store/app';
import { useInbox } from './store/inbox';
import { useEditor } from './store/editor';
import { useYamlFile } from './store/yamlFile';
import { hasUnsavedChanges } from './store/editing';
import { setNavigationGuard, startRouter } from './store/router';
import { startValidation, startYamlValidation } from './store/validation';

applyTheme(useApp.getState().theme);

// Sign in with the token `switchyard serve` printed in the address, if it
// is there, before the first API call (see signInFromURL); then start.
async function boot(): Promise<void> {
  const signedIn = await signInFromURL(location, history, api.login);
  if (signedIn === 'refused') {
    useApp.setState({
      needsLogin: true,
      signInNote:
        'The token in the address was not accepted: the server may have restarted with a new one. Open the address it printed last, or paste its token.',
    });
  }

  startRouter();
  startValidation();
  startYamlValidation();
  void useApp.getState().loadConfig();

  // Live run statuses for history lists; only once the API answers.
  let stopStatus: (() => void) | null = null;
  useApp.subscribe((s) => {
    if (s.server === 'ok' && !stopStatus) {
      stopStatus = openStatusStream(
        (m) => {
          useApp.getState().noteRunStatus(m);
          // Any status change may add or answer an approval.
          useInbox.getState().refreshSoon();
        },
        undefined,
        {
          // YAML files changed on disk are pushed: the open file's editor
          // offers to reload (it polls the disk only while this is down).
          onWorkflowChanged: (m) => useYamlFile.getState().noteWorkflowChanged(m),
          onConnection: (open) => useYamlFile.getState().setPushLive(open),
        },
      );
      void useInbox.getState().refresh();
      // A second node of an already paused run starts waiting without a
      // status change; an occasional refresh catches it.
      setInterval(() => {
        if (document.visibilityState === 'visible') useInbox.getState().refreshSoon();
      }, 15_000);
    }
  });

  setNavigationGuard((to) => {
    const ed = useEditor.getState();
    if (!hasUnsavedChanges()) return true;
    // Staying on the same workflow (e.g. new → its saved id) is not leaving.
    if (to.name === 'editor' && to.id !== null && to.id === ed.workflowId) return true;
    return confirm('You have unsaved changes to this workflow. Leave without saving?');
  });

  window.addEventListener('beforeunload', (e) => {
    if (hasUnsavedChanges()) {
      e.preventDefault();
      e.returnValue = '';
    }
  });

  createRoot(document.getElementById('root')!).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
}

void boot();
