// Which page fills each section of the navigation (sections.ts). A section without an entry shows
// the plain "coming next" page. `sub`: the rest of the path after /console/<section>/ (an open
// conversation's id, a contact's id, …), or null.
import type { JSX } from 'preact';
import type { Role } from '../sections';
import { ConfigPage } from './config/index';
import { ContactsPage } from './contacts/page';
import { InboxPage } from './inbox/page';

export interface PageProps {
  accountId: string;
  role: Role;
  memberId: string;
  sub: string | null;
}

export const pages: Readonly<Record<string, (p: PageProps) => JSX.Element>> = {
  conversaciones: ({ accountId, sub }) => <InboxPage accountId={accountId} openId={sub} />,
  contactos: ({ accountId, role, sub }) => <ContactsPage accountId={accountId} role={role} openId={sub} />,
  configuracion: ({ accountId, role }) => <ConfigPage accountId={accountId} role={role} />,
};
