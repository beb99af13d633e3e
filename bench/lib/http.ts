import { request } from 'node:http';

export interface HttpResponse {
  status: number;
  text: string;
}

/**
 * A plain node:http call. Not fetch: Node's fetch adds `Sec-Fetch-Mode: cors`, which Laurel's browser
 * guard treats as a browser and refuses; autocannon does not send it either.
 */
export function http(
  method: string,
  url: string,
  headers: Record<string, string> = {},
  body?: string,
  timeoutMs = 10_000,
): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${url} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Parses a JSON body; the raw text when it is not JSON. */
export function parseBody(text: string): any {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return text;
  }
}
