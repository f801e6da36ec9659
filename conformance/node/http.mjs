// An `http` step: one HTTP/1.1 request, its response matched like any other output
// (conformance/FORMAT.md §11), as conformance/runner/http_step.py. Only `http://` URLs. The runner
// sends exactly: the URL's path and query as written, `Host` (the URL's authority), the step's
// headers in their order, `Content-Type` for a `json` or `form` body unless the step names one,
// `Content-Length` when there is a body or the method is not GET, HEAD, DELETE, OPTIONS or TRACE,
// and `Connection: close`; nothing else. Redirects are not followed.

import http from 'node:http';
import { byCodePoint } from './glob.mjs';
import { keysOf, parseJson } from './json.mjs';
import { match } from './matching.mjs';
import { g, pyDumps } from './text.mjs';

export const DEFAULT_HTTP_TIMEOUT = 30;
const NO_BODY_METHODS = ['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE'];
const URL_RE = /^http:\/\/([^/?#\s]+)([^#]*)(?:#.*)?$/;
const TARGET_RE = /^[\x21-\x7e]*$/;
const AUTHORITY_RE = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::([0-9]{1,5}))?$/;
const JSON_TYPE = 'application/json';
const FORM_TYPE = 'application/x-www-form-urlencoded';

export class HttpError extends Error {}

const text = (value) => (typeof value === 'string' ? value : pyDumps(value));

/** application/x-www-form-urlencoded as Python's quote_plus(safe=''): A-Za-z0-9 and -._~ kept, space +. */
function formPart(value) {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const ch = String.fromCharCode(byte);
    if (/[A-Za-z0-9_.~-]/.test(ch)) out += ch;
    else if (byte === 0x20) out += '+';
    else out += '%' + byte.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

export function formText(fields) {
  const parts = [];
  for (const name of keysOf(fields)) {
    const value = fields[name];
    for (const item of Array.isArray(value) ? value : [value]) parts.push(`${formPart(name)}=${formPart(text(item))}`);
  }
  return parts.join('&');
}

/** The request an `http` mapping (already substituted) describes: {method, url, headers, body}. */
export function buildRequest(spec, rawText) {
  const given = spec.headers ?? {};
  const headers = keysOf(given).map((name) => [name, text(given[name])]);
  const named = new Set(headers.map(([name]) => name.toLowerCase()));
  let body = '';
  let kind = null;
  if ('json' in spec) {
    body = pyDumps(spec.json);
    kind = JSON_TYPE;
  } else if ('form' in spec) {
    body = formText(spec.form);
    kind = FORM_TYPE;
  } else if ('body' in spec) {
    body = rawText(spec.body);
  }
  if (kind !== null && !named.has('content-type')) headers.push(['Content-Type', kind]);
  return { method: spec.method ?? 'GET', url: spec.url, headers, body };
}

/** What the step sent, for its digest (FORMAT.md §10): the headers sorted by name. */
export function requestRecord(request) {
  const pairs = request.headers.map(([n, v]) => [n, v]).sort((a, b) => byCodePoint(a[0], b[0]) || byCodePoint(a[1], b[1]));
  return ['http', request.method, request.url, pairs, request.body];
}

/** Make the request; every wait (connecting, each read) gives up after `timeout` seconds. */
export function send(request, timeout) {
  const found = URL_RE.exec(request.url);
  if (!found) throw new HttpError(`the URL '${request.url}' is not http://HOST[:PORT]/PATH (only http is supported)`);
  const authority = found[1];
  let target = found[2] || '/';
  if (!target.startsWith('/') && !target.startsWith('?')) throw new HttpError(`the URL '${request.url}' has no path after its host`);
  if (!target.startsWith('/')) target = '/' + target;
  if (!TARGET_RE.test(target)) {
    throw new HttpError(`the path '${target}' has spaces, controls or non-ASCII characters; percent-encode them`);
  }
  const place = AUTHORITY_RE.exec(authority);
  if (!place) throw new HttpError(`the URL '${request.url}' has no usable HOST[:PORT]`);
  const host = place[1].replace(/^\[|\]$/g, '');
  const port = Number(place[2] ?? 80);
  const data = Buffer.from(request.body, 'utf8');
  const names = new Set(request.headers.map(([n]) => n.toLowerCase()));
  const headers = [];
  if (!names.has('host')) headers.push(['Host', authority]);
  headers.push(...request.headers);
  if (!names.has('content-length') && (data.length || !NO_BODY_METHODS.includes(request.method))) {
    headers.push(['Content-Length', String(data.length)]);
  }
  if (!names.has('connection')) headers.push(['Connection', 'close']);
  return new Promise((resolve, reject) => {
    let req;
    try {
      req = http.request({
        host,
        port,
        method: request.method,
        path: target,
        headers: headers.flat(),
        setHost: false,
        agent: false,
      });
    } catch (err) {
      reject(new HttpError(`${err.code ?? err.name}: ${err.message}`));
      return;
    }
    let timedOut = false;
    req.setTimeout(timeout * 1000, () => {
      timedOut = true;
      req.destroy(new Error('timeout'));
    });
    req.on('error', (err) => {
      if (timedOut) reject(new HttpError(`no answer within ${g(timeout)} s (the step may set \`timeout:\`)`));
      else reject(new HttpError(`${err.code ?? err.name}: ${err.message}`));
    });
    req.on('response', (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', (err) => reject(new HttpError(`${err.code ?? err.name}: ${err.message}`)));
      res.on('end', () => {
        const raw = res.rawHeaders;
        const pairs = [];
        for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i], raw[i + 1]]);
        resolve({ status: res.statusCode, reason: res.statusMessage ?? '', headers: pairs, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.end(data.length ? data : undefined);
  });
}

/** Lower-case name -> value; a repeated header's values joined with ", ". */
export function headerMap(response) {
  const out = {};
  for (const [name, value] of response.headers) {
    const key = name.toLowerCase();
    out[key] = key in out ? `${out[key]}, ${value}` : value;
  }
  return out;
}

/** How the response differs from `expect` (status, headers, json, body); captures go into `captures`. */
export function httpProblems(expect, response, captures) {
  const found = [];
  if ('status' in expect) found.push(...match(expect.status, response.status, captures).map((m) => `status: ${m.message}`));
  else if (response.status < 200 || response.status > 299) {
    found.push(`status: expected a 2xx status (the step may set \`expect.status\`), got ${response.status}`);
  }
  if ('headers' in expect) {
    const wanted = {};
    for (const name of keysOf(expect.headers)) wanted[name.toLowerCase()] = expect.headers[name];
    found.push(...match(wanted, headerMap(response), captures).map((m) => `headers ${m}`));
  }
  if ('json' in expect) {
    let document;
    let ok = true;
    try {
      document = parseJson(response.body);
    } catch (err) {
      ok = false;
      found.push(`json: the body is not exactly one JSON document (${err.message})`);
    }
    if (ok) found.push(...match(expect.json, document, captures).map((m) => `json ${m}`));
  }
  if ('body' in expect) found.push(...match(expect.body, response.body, captures).map((m) => `body: ${m.message}`));
  return found;
}

function block(value, limit) {
  if (!value) return '  | (empty)';
  let t = value;
  if (t.length > limit) t = t.slice(0, limit) + `\n... (${t.length - limit} more characters)`;
  return t.replace(/\n+$/, '').split('\n').map((l) => '  | ' + l).join('\n');
}

/** The request and the response, for a failure report. */
export function httpReport(request, response, limit = 8000) {
  const out = [`request: ${request.method} ${request.url}`, ...request.headers.map(([n, v]) => `  | ${n}: ${v}`)];
  if (request.body) out.push('request body:', block(request.body, limit));
  if (!response) return out;
  out.push(`response: ${response.status} ${response.reason}`, ...response.headers.map(([n, v]) => `  | ${n}: ${v}`));
  out.push('response body:', block(response.body, limit));
  return out;
}
