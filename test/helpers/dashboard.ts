import type { TestServer } from './server';

/** A tiny browser over app.request: a cookie jar, form posts, no redirects followed. */
export function dashboardBrowser(t: TestServer) {
  const jar = new Map<string, string>();
  return {
    jar,
    async request(method: string, path: string, form?: Record<string, string>) {
      const headers: Record<string, string> = {};
      if (jar.size) headers.Cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
      const init: RequestInit = { method, headers, redirect: 'manual' };
      if (form) {
        init.body = new URLSearchParams(form).toString();
        headers['Content-Type'] = 'application/x-www-form-urlencoded';
      }
      const res = await t.app.request(path, init);
      for (const c of res.headers.getSetCookie()) {
        const [k, v] = c.split(';')[0]!.split('=');
        if (/max-age=0/i.test(c) || v === '') jar.delete(k!);
        else jar.set(k!, v!);
      }
      return { res, text: await res.text() };
    },
  };
}

/** The CSRF token of a dashboard form page. */
export const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
