// The console's routes: /console/login, /console/invite/<token>, and the signed-in shell with
// one page per section (/console/<section>).
import { InvitePage } from './pages/invite';
import { LoginPage } from './pages/login';
import { Shell } from './pages/shell';
import { BASE, useLocation } from './router';

export function App() {
  const { path, search } = useLocation();
  if (path === `${BASE}/login`) return <LoginPage notice={search.get('aviso')} />;
  const invite = path.match(/^\/console\/invite\/([^/]+)$/);
  if (invite) return <InvitePage token={decodeURIComponent(invite[1]!)} />;
  const slug = path.startsWith(`${BASE}/`) ? path.slice(BASE.length + 1) : '';
  return <Shell slug={slug} />;
}
