// Operator API: POST /admin/v1/jobs/{name}/run (operator.md): runs a periodic job now.
import { z } from 'zod';
import { ApiError } from '../http/errors.js';
import { NoBody, type RoutesFn } from '../http/schemas.js';
import { jobs } from '../jobs/registry.js';
import { runJob } from '../jobs/scheduler.js';

const names = Object.keys(jobs);
/** Every job's name, as a Spanish list ("a, b y c"): the 404 names them all. */
const spokenNames = `${names.slice(0, -1).join(', ')} y ${names.at(-1)}`;

export const jobAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/jobs/:name/run',
    {
      schema: {
        summary: `Run a periodic job now: ${names.join(', ')}`,
        description:
          'Waits for a run in progress, then runs once and answers how many rows it changed. One runner per job across processes.',
        tags: ['Operator'],
        params: z.object({ name: z.string() }),
        body: NoBody,
      },
    },
    async (req) => {
      // Waits for a scheduled run of the same job in progress, then runs: `changed` is this run's.
      const changed = await runJob(s, req.params.name, { wait: true });
      if (changed === null) throw new ApiError('job_not_found', { params: { names: spokenNames } });
      return { ran: req.params.name, changed };
    },
  );
};
