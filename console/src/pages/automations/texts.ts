// Automatizaciones' own words (voseo). The server's error texts are shown verbatim.
export const autoTexts = {
  title: 'Automatizaciones',
  loading: 'Cargando…',
  empty: 'Todavía no hay automatizaciones. Creá una con su flujo en JSON.',
  intro:
    'Cada automatización es un flujo (un disparador y sus pasos) que contesta sola. Solo las activas arrancan; una prueba corre en cualquier estado.',
  status: { draft: 'Borrador', active: 'Activa', paused: 'Pausada' } as Record<string, string>,
  execStatus: {
    running: 'En curso',
    completed: 'Completada',
    handed_off: 'Pasada al equipo',
    failed: 'Fallida',
    cancelled: 'Cancelada',
  } as Record<string, string>,
  counters: {
    running: 'En curso',
    completed: 'Completadas',
    handed_off: 'Pasadas al equipo',
    failed: 'Fallidas',
    cancelled: 'Canceladas',
  } as Record<string, string>,
  countsHint: 'Ejecuciones de los últimos 30 días (las en curso, siempre).',
  trigger: (t: Record<string, unknown>): string => {
    const words = Array.isArray(t.keywords) ? (t.keywords as unknown[]).map(String).join(', ') : '';
    switch (t.type) {
      case 'keyword':
        return `Palabra clave: ${words}`;
      case 'first_message':
        return 'Primer mensaje de un contacto';
      case 'api':
        return 'Desde la API';
      case 'webhook':
        return 'Webhook entrante';
      case 'comment':
        return words ? `Comentario de Instagram: ${words}` : 'Comentario de Instagram';
      default:
        return String(t.type ?? '—');
    }
  },
  editorHint:
    'El flujo es un objeto JSON con name, trigger y steps (mirá docs/automations.md). Al guardar, el servidor revisa todo y marca cada problema con su ubicación.',
  problems: (n: number) => (n === 1 ? 'El flujo tiene 1 problema:' : `El flujo tiene ${n} problemas:`),
  whole: '(el flujo)',
  notObject: 'El flujo tiene que ser un objeto JSON: empezá con { y terminá con }.',
  badJson: (line: number, column: number) =>
    `El JSON no se puede leer cerca de la línea ${line}, columna ${column}. Revisá comas, comillas y llaves.`,
  saved: 'Guardamos el flujo.',
  created: 'Creamos la automatización. Queda en borrador hasta que la actives.',
  activated: 'La automatización está activa: ya arranca con su disparador.',
  paused: 'La automatización está pausada; sus ejecuciones en curso se cancelaron.',
  back: 'Volver a Automatizaciones',
  execEmpty: 'Todavía no corrió. Cuando arranque, sus ejecuciones aparecen acá.',
  stepsEmpty: 'Esta ejecución todavía no corrió ningún paso.',
  cancelled: 'Cancelamos la ejecución.',
  testHint:
    'La prueba corre el flujo de verdad para ese teléfono (en el sandbox, un cliente de prueba). Las preguntas y los textos necesitan que el cliente haya escrito en las últimas 24 horas.',
  testStarted: (status: string) => `La prueba arrancó: ${status}. Mirala en Ejecuciones.`,
  test: 'prueba',
  newFlow: {
    name: 'Nueva automatización',
    trigger: { type: 'keyword', keywords: ['precio'], match: 'contains' },
    steps: [
      { id: 'saludo', type: 'send', text: '¡Hola {{contact.name}}! Ya te pasamos los precios.' },
      { id: 'pase', type: 'handoff', note: 'Pidió precios.' },
    ],
  },
};

export const formatTime = (iso: string | null): string =>
  iso ? new Date(iso).toLocaleString('es-AR', { dateStyle: 'short', timeStyle: 'medium' }) : '—';
