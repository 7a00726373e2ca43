// Plantillas's own words (voseo). The server's error texts are shown verbatim.
export const templateTexts = {
  title: 'Plantillas',
  loading: 'Cargando…',
  empty: 'Todavía no hay plantillas.',
  create: 'Crear plantilla',
  sync: 'Sincronizar',
  syncHint: 'Trae de Meta las plantillas de tus números de WhatsApp Cloud y su estado de revisión.',
  synced: (imported: number, updated: number) => `Listo: ${imported} nuevas y ${updated} actualizadas desde Meta.`,
  created: (name: string) => `Guardaste la plantilla «${name}».`,
  bodyHint: 'Escribí cada variable entre llaves dobles, por ejemplo {{nombre}}. Abajo aparece una fila por variable.',
  noVariables: 'El texto no tiene variables.',
  cloudCreate:
    'Tu cuenta usa un número de WhatsApp Cloud: al guardarla, la plantilla va a Meta para su revisión. Queda «En revisión» hasta que Meta la apruebe o la rechace; esta lista se actualiza sola.',
  pendingHint: 'Las plantillas pendientes se revisan en Meta; esta lista se actualiza sola.',
};

export const statusNames: Record<string, string> = {
  APPROVED: 'Aprobada',
  PENDING: 'En revisión',
  REJECTED: 'Rechazada',
  PAUSED: 'Pausada',
  DISABLED: 'Deshabilitada',
};

export const categoryNames: Record<string, string> = {
  MARKETING: 'Marketing',
  UTILITY: 'Utilidad',
  AUTHENTICATION: 'Autenticación',
};

/** The `{{name}}` placeholders of a body, in order, once each (src/templates/schemas.ts PLACEHOLDER). */
export const placeholders = (body: string): string[] => [
  ...new Set([...body.matchAll(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g)].map((m) => m[1]!)),
];
