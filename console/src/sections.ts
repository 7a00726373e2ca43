// The eight sections of the navigation (console.md "Pages"), and which roles see each one:
// an agent works the inbox (conversations, cases, contacts) and reads campaigns and templates.
export type Role = 'owner' | 'admin' | 'agent';

export interface Section {
  slug: string;
  name: string;
  roles: readonly Role[];
}

const everyone: readonly Role[] = ['owner', 'admin', 'agent'];
const managers: readonly Role[] = ['owner', 'admin'];

export const sections: readonly Section[] = [
  { slug: 'conversaciones', name: 'Conversaciones', roles: everyone },
  { slug: 'casos', name: 'Casos', roles: everyone },
  { slug: 'contactos', name: 'Contactos', roles: everyone },
  { slug: 'campanas', name: 'Campañas', roles: everyone },
  { slug: 'plantillas', name: 'Plantillas', roles: everyone },
  { slug: 'automatizaciones', name: 'Automatizaciones', roles: managers },
  { slug: 'agentes', name: 'Agentes de IA', roles: managers },
  { slug: 'configuracion', name: 'Configuración', roles: managers },
];

export const sectionsFor = (role: Role): Section[] => sections.filter((s) => s.roles.includes(role));
