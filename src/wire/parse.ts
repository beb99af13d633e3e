import type { z } from 'zod';
import { type AppError, badRequest, unprocessable } from '../errors';

// Parsing a request's wire shape (from HTTP, a dashboard form or a config document) with the
// contract's error classes.

const STRUCTURAL = new Set(['invalid_type', 'invalid_union', 'unrecognized_keys']);

function describe(issue: z.core.$ZodIssue): string {
  const where = issue.path.length ? issue.path.map(String).join('.') : 'body';
  if (issue.code === 'invalid_type') {
    const input = (issue as { input?: unknown }).input;
    if (input === undefined || input === null) return `${where} is required`;
    // zod names a key-value map a "record"; in JSON it is an object.
    const expected = issue.expected === 'record' ? 'object' : String(issue.expected);
    return `${where} must be ${/^[aeiou]/.test(expected) ? 'an' : 'a'} ${expected}`;
  }
  return `${where}: ${issue.message}`;
}

/**
 * Classifies zod issues into the contract's two classes: a missing field or a wrong JSON type is
 * structural (400); anything else is a value outside its domain (422).
 */
export function zodToAppError(error: z.ZodError): AppError {
  const structural = error.issues.find((i) => STRUCTURAL.has(i.code));
  const first = structural ?? error.issues[0];
  const message = first ? describe(first) : 'Invalid request';
  return structural ? badRequest(message) : unprocessable(message);
}

/**
 * safeParse whose issues carry their input (it tells a missing field from one of the wrong type). A
 * parse runs without a context first: zod spreads a given one into a new object on every parse
 * ({ ...ctx, async }), and V8 gives each such object fresh hidden classes (src/wire/common.ts extend).
 * Only a failing parse runs again, with `reportInput`.
 */
export function safeParseReported<S extends z.ZodType>(schema: S, data: unknown) {
  const result = schema.safeParse(data);
  if (result.success) return result;
  const reported = schema.safeParse(data, { reportInput: true });
  return reported.success ? result : reported;
}

export function parseWith<S extends z.ZodType>(schema: S, data: unknown): z.output<S> {
  const result = safeParseReported(schema, data);
  if (!result.success) throw zodToAppError(result.error);
  return result.data;
}
