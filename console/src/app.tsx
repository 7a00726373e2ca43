// The console's routes: /console/login, /console/invite/<token>, /console/conectar/<uid> (an AI
// app's consent), and the signed-in shell with one page per section (/console/<section>).
import { ConnectPage } from './pages/connect';
import { InvitePage } from './pages/invite';
import { LoginPage } from './pages/login';
import { Shell } from './pages/shell';
import { BASE, useLocation } from './router';

export function App() {
  const { path, search } = useLocation();
  if (path === `${BASE}/login`) return <LoginPage notice={search.get('aviso')} next={search.get('siguiente')} />;
  const invite = path.match(/^\/console\/invite\/([^/]+)$/);
  if (invite) return <InvitePage token={decodeURIComponent(invite[1]!)} />;
  const connect = path.match(/^\/console\/conectar\/([^/]+)$/);
  if (connect) return <ConnectPage uid={decodeURIComponent(connect[1]!)} />;
  const slug = path.startsWith(`${BASE}/`) ? path.slice(BASE.length + 1) : '';
  return <Shell slug={slug} />;
}
