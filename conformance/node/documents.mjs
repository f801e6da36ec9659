// Which schema every JSON document a scenario sees must pass (spec/schemas/index.json; FORMAT.md),
// as conformance/runner/schemas.py: `frame` for every JSON-lines frame, `errorDocument` for the
// `--json` output of a refused command, `commands` for each command's `--json` output, `files` for
// repo files matching a glob. Every *.schema.json of the folder is loaded, keyed by file name and
// `$id`. Without an index (or with --frame-schema) only frames are validated.

import fs from 'node:fs';
import path from 'node:path';
import { isJsonObject } from './json.mjs';
import { bestError, Registry, SchemaError } from './schema.mjs';
import { short } from './text.mjs';

const FRAME_KINDS = ['event', 'error', 'done'];

/** A `files` glob of the index as a RegExp over a whole relative path. */
export function indexGlob(pattern) {
  const out = [];
  const segments = pattern.split('/');
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1;
    if (segment === '**') {
      out.push(last ? '.*' : '(?:[^/]*/)*');
      return;
    }
    for (let j = 0; j < segment.length; j += 1) {
      const c = segment[j];
      const end = c === '[' ? classEnd(segment, j) : null;
      if (c === '*') out.push('[^/]*');
      else if (c === '?') out.push('[^/]');
      else if (end !== null) {
        let body = segment.slice(j + 1, end);
        if (body[0] === '!' || body[0] === '^') body = '^' + body.slice(1);
        out.push('[' + body.replace(/\\/g, '\\\\').replace(/\[/g, '\\[') + ']');
        j = end;
      } else out.push(c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
    }
    if (!last) out.push('/');
  });
  return new RegExp('^(?:' + out.join('') + ')$', 'su');
}

function classEnd(segment, start) {
  let j = start + 1;
  if (segment[j] === '!' || segment[j] === '^') j += 1;
  if (segment[j] === ']') j += 1;
  const end = segment.indexOf(']', j);
  return end < 0 ? null : end;
}

export class Documents {
  /** `dir`: spec/schemas; `frameSchema`: an explicit frame schema file (--frame-schema), or null. */
  constructor(dir, regexOptions, frameSchema = null) {
    this.registry = new Registry(regexOptions);
    for (const name of fs.readdirSync(dir).sort()) {
      if (name.endsWith('.schema.json')) this.registry.add(name, readJson(path.join(dir, name)));
    }
    this.frame = 'frame.schema.json';
    if (frameSchema) {
      this.frame = '--frame-schema';
      this.registry.add(this.frame, readJson(frameSchema));
    }
    this.errorDocument = null;
    this.commands = {};
    this.files = [];
    const indexFile = path.join(dir, 'index.json');
    if (fs.existsSync(indexFile)) {
      const index = readJson(indexFile);
      if (!frameSchema) this.frame = index.frame ?? this.frame;
      this.errorDocument = index.errorDocument ?? null;
      this.commands = { ...(index.commands ?? {}) };
      this.files = (index.files ?? []).map((e) => [indexGlob(e.glob), e.glob, e.schema]);
      for (const ref of [this.frame, this.errorDocument, ...Object.values(this.commands), ...this.files.map((f) => f[2])]) {
        if (ref !== null) this.lookup(ref);
      }
    } else {
      this.lookup(this.frame);
    }
  }

  lookup(ref) {
    try {
      return this.registry.resolve(ref, undefined);
    } catch (err) {
      throw new SchemaError(`the schema '${ref}' cannot be found (${err.message})`);
    }
  }

  resolvable(ref) {
    try {
      this.registry.resolve(ref, undefined);
      return true;
    } catch {
      return false;
    }
  }

  /** [message, "/json/path"] of the most telling error of `document` against `ref`, or null. */
  error(document, ref) {
    const { doc, schema } = this.lookup(ref);
    const found = bestError(this.registry.errors(schema, document, doc));
    return found ? [found.message, found.path.map((p) => `/${p}`).join('')] : null;
  }

  problem(document, ref) {
    const found = this.error(document, ref);
    return found ? `${found[0]} (at ${found[1] || '/'})` : null;
  }

  /** null, or why `frame` fails the frame schema, checked against the narrowest schema that applies. */
  frameProblem(frame) {
    const found = this.error(frame, this.frame);
    if (found === null) return null;
    if (isJsonObject(frame)) {
      const narrow = this.narrow(frame);
      if (narrow !== null) return narrow;
    }
    return `${found[0]} (at ${found[1] || '/'})`;
  }

  narrow(frame) {
    const kind = frame.type;
    const parts = [];
    if (kind === 'event') parts.push(['/event', frame.event, 'events.schema.json#/$defs/event']);
    else if (kind === 'error') parts.push(['/error', frame.error, 'errors.schema.json#/$defs/errorBody']);
    else if (typeof kind === 'string') {
      const payload = frame.payload;
      const data = isJsonObject(payload) ? payload.data : undefined;
      parts.push(['/payload/data', data, `results.schema.json#/$defs/${kind}`]);
    }
    const definition = FRAME_KINDS.includes(kind) ? kind : 'result';
    parts.push(['', frame, `${this.frame.split('#')[0]}#/$defs/${definition}`]);
    for (const [prefix, document, ref] of parts) {
      if (document === undefined || document === null || !this.resolvable(ref)) continue;
      const found = this.error(document, ref);
      if (found !== null) return `${found[0]} (at ${(prefix + found[1]) || '/'}, checked as ${ref})`;
    }
    return null;
  }

  frameReport(number, frame) {
    const problem = this.frameProblem(frame);
    if (problem === null) return null;
    return `frame #${number} does not match ${this.frame}: ${problem}\n    frame: ${short(frame, 400)}`;
  }

  /** The `commands` key of a command line: the longest run of its non-option words that is a
   * key, the leftmost such run first. */
  commandKey(args) {
    const words = args.filter((a) => !a.startsWith('-'));
    for (let start = 0; start < words.length; start += 1) {
      for (let end = words.length; end > start; end -= 1) {
        const key = words.slice(start, end).join(' ');
        if (Object.prototype.hasOwnProperty.call(this.commands, key)) return key;
      }
    }
    return null;
  }

  /** The schema a repo file must pass, or null. */
  fileSchema(rel) {
    for (const [re, , ref] of this.files) if (re.test(rel)) return ref;
    return null;
  }
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new SchemaError(`cannot load ${file}: ${err.message}`);
  }
}

export { SchemaError };
