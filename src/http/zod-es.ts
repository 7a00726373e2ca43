// Spanish (voseo) texts for zod's validation issues: the `message` of each problem in a 400.
import { z } from 'zod';

const typeNames: Record<string, string> = {
  string: 'un texto',
  number: 'un número',
  int: 'un número entero',
  boolean: 'verdadero o falso',
  object: 'un objeto',
  array: 'una lista',
  null: 'null',
  undefined: 'nada',
};

export function installSpanishZodMessages(): void {
  z.config({
    customError: (iss) => {
      switch (iss.code) {
        case 'invalid_type':
          if (iss.input === undefined) return 'Falta este campo obligatorio.';
          return `Tiene que ser ${typeNames[iss.expected] ?? iss.expected}.`;
        case 'too_small':
          if (iss.origin === 'string') return `Tiene que tener al menos ${iss.minimum} caracteres.`;
          if (iss.origin === 'array') return `Tiene que tener al menos ${iss.minimum} elementos.`;
          return `Tiene que ser mayor o igual a ${iss.minimum}.`;
        case 'too_big':
          if (iss.origin === 'string') return `Tiene que tener como máximo ${iss.maximum} caracteres.`;
          if (iss.origin === 'array') return `Tiene que tener como máximo ${iss.maximum} elementos.`;
          return `Tiene que ser menor o igual a ${iss.maximum}.`;
        case 'invalid_format':
          if (iss.format === 'uuid' || iss.format === 'guid') return 'Tiene que ser un UUID.';
          if (iss.format === 'url') return 'Tiene que ser una URL http o https.';
          if (iss.format === 'datetime') return 'Tiene que ser una fecha ISO 8601 (por ejemplo 2026-11-22T12:00:00.000Z).';
          return 'El formato no es válido.';
        case 'invalid_value':
          return `Tiene que ser uno de: ${iss.values.map((v) => String(v)).join(', ')}.`;
        case 'unrecognized_keys':
          return `Campos desconocidos: ${iss.keys.join(', ')}. Sacalos del pedido.`;
        case 'invalid_key':
          return 'Clave no válida.';
        case 'invalid_union':
          return 'El valor no tiene una forma válida.';
        case 'not_multiple_of':
          return `Tiene que ser múltiplo de ${iss.divisor}.`;
        default:
          return undefined;
      }
    },
  });
}
