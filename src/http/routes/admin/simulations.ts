import { parseDocument } from '../../../config-as-code/document';
import type { Deps } from '../../../deps';
import { notFoundNamed, unprocessable } from '../../../errors';
import {
  cancelSimulation,
  deleteSimulation,
  getSimulation,
  listSimulations,
  MAX_RUNNING,
  startSimulation,
  TooManySimulations,
} from '../../../simulations/runs';
import { z } from '../../../zod';
import { adminRoutes, errorResponse, jsonContent, jsonResponse, mount, type RoutesApp } from '../../openapi';
import { parseWith } from '../../../wire/parse';
import { readJson } from '../../validate';
import { isUuid } from '../../../admin/resource';

const instant = z
  .string()
  .max(40)
  .refine((s) => !Number.isNaN(Date.parse(s)) && /^\d{4}-\d{2}-\d{2}/.test(s), {
    message: 'must be an ISO 8601 date or date-time',
  });

const RequestSchema = z
  .strictObject({
    config: z
      .record(z.string(), z.unknown())
      .describe('The draft: a laurel.config/v1 document (GET /admin/v1/config)'),
    from: instant
      .optional()
      .describe('Replay events recorded at or after this instant (default: the beginning)'),
    to: instant.optional().describe('Replay events recorded at or before this instant (default: now)'),
    sample: z
      .union([
        z.number().int().min(1).max(10_000_000),
        z.array(z.string().min(1).max(255)).min(1).max(10_000),
      ])
      .optional()
      .describe('A number of random users, or a list of user ids (default: every user)'),
    prune: z
      .boolean()
      .optional()
      .describe(
        'Items of the sections the draft gives but not in it are deleted in the draft (default true)',
      ),
  })
  .openapi('SimulationRequest');

const Side = <T extends z.ZodType>(t: T) => z.object({ current: t.nullable(), draft: t.nullable() });
const DistributionSchema = z.object({
  users: z.number(),
  mean: z.number(),
  min: z.number(),
  max: z.number(),
  percentiles: z.record(z.string(), z.number()),
});

const ReportSchema = z
  .object({
    window: z.object({ from: z.string().nullable(), to: z.string() }),
    users: z.number().int(),
    events: z.number().int(),
    completions: z.number().int(),
    replay: z.record(
      z.string(),
      z.object({
        ops: z.number(),
        durationMs: z.number(),
        opsPerSecond: z.number(),
        eventsPerSecond: z.number(),
      }),
    ),
    selfCheck: z.object({
      users: z.number().int(),
      matched: z.number().int(),
      applicable: z.boolean(),
      mismatches: z.array(
        z.object({ userId: z.string(), what: z.string(), live: z.unknown(), replay: z.unknown() }),
      ),
    }),
    changedUsers: z.number().int(),
    draft: z.object({
      create: z.number(),
      update: z.number(),
      delete: z.number(),
      warnings: z.array(z.string()),
    }),
    points: z.array(
      z.object({
        key: z.string(),
        name: z.string(),
        distribution: Side(DistributionSchema),
        histogram: z.array(
          z.object({ from: z.number(), to: z.number(), current: z.number(), draft: z.number() }),
        ),
        levels: z.array(
          z.object({
            key: z.string(),
            name: z.string(),
            points: z.number(),
            current: z.number().nullable(),
            draft: z.number().nullable(),
          }),
        ),
        triggers: z.array(
          z.object({
            id: z.string(),
            type: z.string(),
            points: Side(z.number()),
            awards: Side(z.object({ count: z.number(), points: z.number() })),
          }),
        ),
        awardsPerDay: z.array(z.object({ date: z.string(), current: z.number(), draft: z.number() })),
      }),
    ),
    achievements: z.array(
      z.object({
        key: z.string(),
        name: z.string(),
        completions: Side(z.number()),
        rarity: Side(z.number()),
      }),
    ),
    streaks: z.object({
      distribution: Side(DistributionSchema),
      histogram: z.array(
        z.object({ from: z.number(), to: z.number().nullable(), current: z.number(), draft: z.number() }),
      ),
    }),
    leaderboards: z.array(
      z.object({
        key: z.string(),
        name: z.string(),
        run: Side(z.string()),
        top: Side(z.array(z.object({ rank: z.number(), userId: z.string(), value: z.number() }))),
        rankChanges: z.number().int(),
      }),
    ),
    topChanges: z.array(z.record(z.string(), z.unknown())),
    notReproduced: z.array(z.string()),
  })
  .openapi('SimulationReport');

export const SimulationSchema = z
  .object({
    id: z.string(),
    status: z.enum(['running', 'done', 'failed', 'cancelled']),
    phase: z.enum(['preparing', 'current', 'draft', 'report']).nullable(),
    progress: z.number().min(0).max(1),
    etaSeconds: z.number().nullable().describe('Estimated seconds left'),
    createdAt: z.string(),
    finishedAt: z.string().nullable(),
    updatedAt: z.string(),
    request: z.object({
      from: z.string().nullable(),
      to: z.string(),
      sample: z.union([z.number(), z.array(z.string())]).nullable(),
      prune: z.boolean(),
    }),
    error: z.string().nullable(),
    report: ReportSchema.nullable().describe('Set once status is done'),
  })
  .openapi('Simulation');

function simulationId(id: string): string {
  if (!isUuid(id)) throw notFoundNamed('Simulation', id);
  return id;
}

/** The responses of a route on one simulation: `found` with it, or 404. */
const oneSimulation = (found: string) => ({
  200: jsonResponse(found, SimulationSchema),
  404: errorResponse('No such simulation'),
});

/**
 * `/admin/v1/simulations` (issue 21): what-if previews of a draft configuration over recorded history.
 */
export function mountSimulations(app: RoutesApp, deps: Deps): void {
  const route = adminRoutes(['simulations']);
  const idParam = z.object({ id: z.string() });

  const startRun = route('post', '/simulations', {
    summary:
      'Start a what-if simulation: replay recorded history under the current and a draft configuration',
    description: `Runs in the background (poll GET /admin/v1/simulations/{id}). At most ${MAX_RUNNING} run at a time. Changes no live state, history, configuration or webhook.`,
    request: { body: jsonContent(RequestSchema) },
    responses: {
      202: jsonResponse('Started', SimulationSchema),
      400: errorResponse('Malformed request'),
      409: errorResponse(`${MAX_RUNNING} simulations are already running`),
      422: errorResponse('Invalid window or sample, or the draft document has errors'),
    },
  });
  mount(app, startRun, async (c) => {
    const body = parseWith(RequestSchema, await readJson(c));
    const parsed = parseDocument(body.config);
    if ('problems' in parsed) {
      const more = parsed.problems.length > 3 ? ` (and ${parsed.problems.length - 3} more)` : '';
      throw unprocessable(`Invalid configuration document: ${parsed.problems.slice(0, 3).join('; ')}${more}`);
    }
    const from = body.from === undefined ? undefined : Date.parse(body.from);
    const to = body.to === undefined ? undefined : Date.parse(body.to);
    if (from !== undefined && to !== undefined && from > to) throw unprocessable('from must not be after to');
    if (to !== undefined && to > deps.clock.now()) throw unprocessable('to must not be in the future');
    try {
      const record = await startSimulation(deps, {
        config: parsed.doc,
        from,
        to,
        sample: body.sample,
        prune: body.prune,
      });
      return c.json(record, 202);
    } catch (err) {
      if (err instanceof TooManySimulations) return c.json({ error: err.message }, 409);
      throw err;
    }
  });

  const listRuns = route('get', '/simulations', {
    summary: 'Recent simulations, newest first (without their reports)',
    responses: { 200: jsonResponse('Simulations', z.array(SimulationSchema)) },
  });
  mount(app, listRuns, async (c) => c.json(await listSimulations(deps)));

  const getRun = route('get', '/simulations/{id}', {
    summary: 'A simulation: status, progress, estimated time left, and the report once done',
    request: { params: idParam },
    responses: oneSimulation('The simulation'),
  });
  const cancelRun = route('post', '/simulations/{id}/cancel', {
    summary: 'Cancel a running simulation (its replay keys are deleted)',
    request: { params: idParam },
    responses: oneSimulation('The simulation after the request'),
  });
  for (const [definition, act] of [
    [getRun, getSimulation],
    [cancelRun, cancelSimulation],
  ] as const) {
    mount(app, definition, async (c) => {
      const id = simulationId(c.req.param('id'));
      const r = await act(deps, id);
      if (!r) throw notFoundNamed('Simulation', id);
      return c.json(r);
    });
  }

  const deleteRun = route('delete', '/simulations/{id}', {
    summary: 'Delete a simulation (a running one is cancelled first)',
    request: { params: idParam },
    responses: {
      204: { description: 'Deleted' },
      404: errorResponse('No such simulation'),
    },
  });
  mount(app, deleteRun, async (c) => {
    const id = simulationId(c.req.param('id'));
    if (!(await deleteSimulation(deps, id))) throw notFoundNamed('Simulation', id);
    return c.body(null, 204);
  });
}
