// `files` globs (conformance/FORMAT.md): relative POSIX patterns matched against the regular files
// and directories under the repo dir. `**` as a whole segment is zero or more segments, `*` any run
// of characters but `/`, `?` one such character, `[...]` a class (`[!...]` negated). A leading `.` is
// not special. Symlinks are listed but not followed. Results sorted by path in code point order.

import fs from 'node:fs';
import path from 'node:path';

function segmentSource(segment) {
  let out = '';
  for (let i = 0; i < segment.length; i += 1) {
    const c = segment[i];
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = segment.indexOf(']', i + 2);
      if (end < 0) {
        out += '\\[';
        continue;
      }
      let body = segment.slice(i + 1, end);
      let neg = '';
      if (body.startsWith('!')) {
        neg = '^';
        body = body.slice(1);
      }
      out += '[' + neg + body.replace(/[\\\]\[^]/g, (m) => '\\' + m) + ']';
      i = end;
    } else out += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return out;
}

export function globRegExp(pattern) {
  const segments = pattern.split('/').filter((s) => s !== '' && s !== '.');
  let source = '^';
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1;
    if (segment === '**') source += last ? '(?:[^/]+(?:/[^/]+)*)?' : '(?:[^/]+/)*';
    else source += segmentSource(segment) + (last ? '' : '/');
  });
  source = source.replace(/\/\(\?:\[\^\/\]\+\(\?:\/\[\^\/\]\+\)\*\)\?$/, '(?:/[^/]+)*');
  return new RegExp(source + '$', 'u');
}

function walk(root, rel, out) {
  let entries;
  try {
    entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const name = rel ? `${rel}/${entry.name}` : entry.name;
    out.push(name);
    if (entry.isDirectory()) walk(root, name, out);
  }
}

/** Relative paths under `root` matching `pattern`, sorted by code point. */
export function glob(root, pattern) {
  const re = globRegExp(pattern);
  const all = [];
  walk(root, '', all);
  return all.filter((p) => re.test(p)).sort(byCodePoint);
}

export function byCodePoint(a, b) {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d) return d;
  }
  return x.length - y.length;
}

/** Every path under `root` (directories with a trailing /), for failure reports. */
export function listing(root, limit = 60) {
  const all = [];
  walk(root, '', all);
  let names = all.map((p) => {
    let dir = false;
    try {
      dir = fs.statSync(path.join(root, p)).isDirectory();
    } catch {
      dir = false;
    }
    return p + (dir ? '/' : '');
  }).sort(byCodePoint);
  if (names.length > limit) names = [...names.slice(0, limit), `... (${names.length - limit} more)`];
  return names.join('\n');
}
