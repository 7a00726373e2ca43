// The demo account of an empty embedded database (issue 2: "Start like a product").
import type { Db } from './db/index.js';
import { createKey } from './keys/service.js';
import { newId } from './lib/ids.js';

export interface DemoSeed {
  accountId: string;
  key: string;
  phoneNumberId: string;
  pipelineId: string;
  templateIds: string[];
}

export async function seedDemoIfEmpty(db: Db, now: Date): Promise<DemoSeed | null> {
  const any = await db.selectFrom('accounts').select('id').limit(1).executeTakeFirst();
  if (any) return null;
  const accountId = newId();
  const phoneNumberId = newId();
  const pipelineId = newId();
  const templateIds = [newId(), newId()];
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('accounts').values({ id: accountId, name: 'Demo', plan: 'escala', created_at: now, updated_at: now }).execute();
    await trx
      .insertInto('phone_numbers')
      .values({
        id: phoneNumberId,
        account_id: accountId,
        phone: '5491100000000',
        name: 'Demo (sandbox)',
        provider: 'sandbox',
        is_default: true,
        created_at: now,
      })
      .execute();
    await trx
      .insertInto('templates')
      .values([
        {
          id: templateIds[0],
          account_id: accountId,
          name: 'confirmacion_pedido',
          category: 'UTILITY',
          language: 'es_AR',
          body: 'Hola {{nombre}}, tu pedido {{pedido}} está confirmado. ¡Gracias por tu compra!',
          variables: JSON.stringify([
            { name: 'nombre', label: 'Nombre', example: 'Ana' },
            { name: 'pedido', label: 'Número de pedido', example: '1234' },
          ]),
          status: 'APPROVED',
          created_at: now,
          updated_at: now,
        },
        {
          id: templateIds[1],
          account_id: accountId,
          name: 'promo_mensual',
          category: 'MARKETING',
          language: 'es_AR',
          body: 'Hola {{nombre}}, este mes tenés {{descuento}} de descuento. Respondé BAJA para no recibir más.',
          variables: JSON.stringify([
            { name: 'nombre', label: 'Nombre', example: 'Ana' },
            { name: 'descuento', label: 'Descuento', example: '20 %' },
          ]),
          status: 'APPROVED',
          created_at: now,
          updated_at: now,
        },
      ])
      .execute();
    await trx
      .insertInto('pipelines')
      .values({ id: pipelineId, account_id: accountId, name: 'Ventas', is_default: true, created_at: now })
      .execute();
    await trx
      .insertInto('stages')
      .values([
        { id: newId(), pipeline_id: pipelineId, name: 'Consulta', kind: 'open', position: 0 },
        { id: newId(), pipeline_id: pipelineId, name: 'Ganado', kind: 'won', position: 1 },
        { id: newId(), pipeline_id: pipelineId, name: 'Perdido', kind: 'lost', position: 2 },
      ])
      .execute();
  });
  const account = await db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirstOrThrow();
  const { key } = await createKey(db, account, 'demo', now);
  return { accountId, key, phoneNumberId, pipelineId, templateIds };
}
