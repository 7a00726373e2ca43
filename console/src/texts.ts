// The console's own words (Argentine Spanish, voseo). What the server answers is shown verbatim;
// these are only the page's labels and the texts for answers without one.
export const texts = {
  loginFailed: 'Email o contraseña incorrectos.',
  tooManyAttempts: (seconds: number | null) =>
    seconds
      ? `Hubo demasiados intentos. Esperá ${Math.ceil(seconds / 60)} min y probá de nuevo.`
      : 'Hubo demasiados intentos. Esperá unos minutos y probá de nuevo.',
  offline: 'No pudimos conectarnos con el servidor. Revisá tu conexión y probá de nuevo.',
  serverError: 'Algo falló en el servidor. Probá de nuevo en un rato.',
  unexpected: (status: number) => `El servidor respondió ${status}. Probá de nuevo.`,
  passwordLength: 'La contraseña tiene que tener entre 12 y 256 caracteres.',
  passwordMismatch: 'Las contraseñas no coinciden. Escribí la misma en los dos campos.',
  passwordSaved: 'Listo, tu contraseña quedó guardada. Ingresá con tu email y tu contraseña.',
  sessionEnded: 'Cerraste la sesión.',
  sessionLost: 'Tu sesión terminó. Entrá de nuevo y seguís donde estabas.',
  denied: 'No tenés permiso para ver esta sección. Si la necesitás, pedíselo a quien administra la cuenta.',
};
