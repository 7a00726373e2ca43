// Which page fills each section of the navigation (sections.ts). `sub`: the rest of the path
// after /console/<section>/ (an open conversation's id, a contact's id, …), or null.
import type { JSX } from 'preact';
import type { Role } from '../sections';
import { AgentsPage } from './agents/index';
import { AutomationsPage } from './automations/index';
import { CampaignsPage } from './campaigns/page';
import { CasesPage } from './cases/page';
import { ConfigPage } from './config/index';
import { ContactsPage } from './contacts/page';
import { InboxPage } from './inbox/page';
import { TemplatesPage } from './templates/page';

export interface PageProps {
  accountId: string;
  role: Role;
  memberId: string;
  sub: string | null;
}

export const pages: Readonly<Record<string, (p: PageProps) => JSX.Element>> = {
  conversaciones: ({ accountId, sub }) => <InboxPage accountId={accountId} openId={sub} />,
  contactos: ({ accountId, role, sub }) => <ContactsPage accountId={accountId} role={role} openId={sub} />,
  casos: ({ accountId }) => <CasesPage accountId={accountId} />,
  configuracion: ({ accountId, role, memberId }) => <ConfigPage accountId={accountId} role={role} memberId={memberId} />,
  campanas: ({ accountId, role, sub }) => <CampaignsPage accountId={accountId} role={role} sub={sub} />,
  plantillas: ({ accountId, role }) => <TemplatesPage accountId={accountId} role={role} />,
  automatizaciones: ({ accountId, sub }) => <AutomationsPage accountId={accountId} sub={sub} />,
  agentes: ({ accountId, sub }) => <AgentsPage accountId={accountId} sub={sub} />,
};
