// zod's validation issues speak Spanish (voseo): the `message` of each problem in a 400 comes
// from the catalogue.
import { z } from 'zod';
import { validationMessage } from './messages.es-AR.js';

export function installSpanishZodMessages(): void {
  z.config({ customError: validationMessage });
}
