// Campañas's own words (voseo). The server's error texts are shown verbatim.
export const campaignTexts = {
  title: 'Campañas',
  loading: 'Cargando…',
  empty: 'Todavía no hay campañas. Creá una para mandar una plantilla a tus contactos.',
  emptyAgent: 'Todavía no hay campañas.',
  create: 'Crear campaña',
  newTitle: 'Nueva campaña',
  back: 'Volver a Campañas',
  notFound: 'No encontramos esta campaña. Revisá el enlace o volvé a la lista.',
  noTemplates: 'No hay plantillas aprobadas. Creá una en Plantillas y esperá su aprobación.',
  noNumbers: 'La cuenta no tiene números conectados. Conectá uno en Configuración.',
  variablesHint:
    'Cada variable toma el atributo del contacto con su mismo nombre (si no lo tiene, el ejemplo de la plantilla), o un valor fijo para todos.',
  fromAttribute: (name: string, example: string) => `Atributo «${name}» del contacto${example ? ` (si falta: ${example})` : ''}`,
  fixed: 'Valor fijo',
  audienceHint: 'Reciben la campaña los contactos que tienen todos estos atributos. Sin filtros, todos los contactos.',
  addFilter: 'Agregar filtro',
  removeFilter: (n: number) => `Quitar filtro ${n}`,
  now: 'Ahora',
  later: 'Programar',
  cancelAsk: '¿Cancelar la campaña? Los destinatarios que todavía no la recibieron no la van a recibir.',
  cancelled: 'Cancelaste la campaña.',
  created: 'Creaste la campaña.',
  liveHint: 'Los contadores se actualizan solos mientras se envía.',
};

export const statusNames: Record<string, string> = {
  draft: 'Borrador',
  scheduled: 'Programada',
  sending: 'Enviando',
  completed: 'Terminada',
  cancelled: 'Cancelada',
  failed: 'Falló',
};

export const formatTime = (iso: string | null): string =>
  iso ? new Date(iso).toLocaleString('es-AR', { dateStyle: 'short', timeStyle: 'short' }) : '—';
