// Which schema every JSON document a scenario sees must pass (contracts: spec/schemas/index.json):
// frames against `frame`, a `--json` command's stdout against `errorDocument` (non-zero exit) or
// the `commands` entry of its longest command prefix, files matching a `files[].glob` against that
// schema. Without index.json only frames are checked, against frame.schema.json.

import fs from 'node:fs';
import path from 'node:path';
import { globRegExp } from './glob.mjs';
import { bestError, describe, Registry, SchemaError } from './schema.mjs';
import { short } from './text.mjs';

const FRAME_KINDS = ['event', 'error', 'done'];

export class Documents {
  /** `dir`: spec/schemas; `frameSchema`: an explicit frame schema file (--frame-schema), or null. */
  constructor(dir, regexOptions, frameSchema = null) {
    this.dir = dir;
    this.registry = Registry.fromDir(dir, regexOptions);
    const indexFile = path.join(dir, 'index.json');
    this.index = fs.existsSync(indexFile) ? JSON.parse(fs.readFileSync(indexFile, 'utf8')) : null;
    let frameRef = this.index?.frame ?? 'frame.schema.json';
    if (frameSchema) {
      const doc = JSON.parse(fs.readFileSync(frameSchema, 'utf8'));
      this.registry.add('(frame schema)', doc);
      frameRef = '(frame schema)';
      this.frameName = frameSchema;
    } else {
      this.frameName = `spec/schemas/${frameRef}`;
    }
    this.frameRef = frameRef;
    this.frameDoc = this.registry.resolve(frameRef.split('#')[0], undefined).doc;
    this.fileGlobs = (this.index?.files ?? []).map((entry) => [globRegExp(entry.glob), entry.schema]);
    for (const ref of this.allRefs()) this.registry.resolve(ref, undefined); // a bad index fails early
  }

  allRefs() {
    if (!this.index) return [];
    return [this.index.errorDocument, ...Object.values(this.index.commands ?? {}), ...(this.index.files ?? []).map((f) => f.schema)].filter(Boolean);
  }

  errorText(ref, value) {
    const { doc, schema } = this.registry.resolve(ref, undefined);
    const error = bestError(this.registry.errors(schema, value, doc));
    return error ? describe(error) : null;
  }

  /** null, or why `frame` does not pass the frame schema (checked against its kind's $defs first). */
  frameProblem(frame) {
    const { doc, schema } = this.registry.resolve(this.frameRef, undefined);
    if (!this.registry.errors(schema, frame, doc).length) return null;
    const kind = frame && typeof frame === 'object' && !Array.isArray(frame) ? frame.type : undefined;
    const definition = FRAME_KINDS.includes(kind) ? kind : 'result';
    let error = null;
    if (this.frameDoc.$defs && definition in this.frameDoc.$defs) {
      error = bestError(this.registry.errors(this.frameDoc.$defs[definition], frame, this.frameDoc));
    }
    if (error === null || !(frame && typeof frame === 'object' && !Array.isArray(frame))) {
      error = bestError(this.registry.errors(schema, frame, doc));
    }
    const at = error.path.join('/');
    return `${error.message} (checked as $defs/${definition}${at ? ', at /' + at : ''})`;
  }

  frameReport(number, frame, problem, prefix = '') {
    return `${prefix}frame #${number} does not match ${this.frameName}: ${problem}\n    frame: ${short(frame, 400)}`;
  }

  /** Problems with a `run` step's stdout (argv after the impl command), or [] when it needs no check. */
  commandProblems(args, returncode, stdout) {
    if (!this.index || !stdout || !args.includes('--json')) return [];
    const words = args.filter((a) => !a.startsWith('-'));
    let ref;
    let what;
    if (returncode !== 0) {
      ref = this.index.errorDocument;
      what = 'the error document';
    } else {
      let best = null;
      for (const key of Object.keys(this.index.commands ?? {})) {
        const parts = key.split(' ');
        if (parts.length <= words.length && parts.every((p, i) => p === words[i]) && (!best || parts.length > best.split(' ').length)) best = key;
      }
      if (best === null) return [`schema: no schema for the output of \`${words.join(' ')}\` (add it to spec/schemas/index.json "commands")`];
      ref = this.index.commands[best];
      what = `the output of \`${best}\``;
    }
    if (!ref) return [];
    let document;
    try {
      document = JSON.parse(stdout);
    } catch (err) {
      return [`schema: stdout of a --json command is not one JSON document (${err.message})`];
    }
    const problem = this.errorText(ref, document);
    return problem ? [`schema: ${what} does not match spec/schemas/${ref}: ${problem}`] : [];
  }

  /** The schema a repo file must pass, or null. */
  fileSchema(rel) {
    for (const [re, ref] of this.fileGlobs) if (re.test(rel)) return ref;
    return null;
  }
}

export { SchemaError };
