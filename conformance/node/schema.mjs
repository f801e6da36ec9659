// A small JSON Schema (draft 2020-12) validator for exactly the keywords the suite's schemas use
// (contracts: $ref $defs type properties required additionalProperties items prefixItems enum const
// oneOf anyOf allOf not if/then/else pattern minLength maxLength minimum maximum exclusiveMinimum
// minItems maxItems uniqueItems patternProperties propertyNames, plus contains, minProperties,
// maxProperties, exclusiveMaximum, dependentRequired for scenario.schema.json). A keyword outside that list is a
// SchemaError, so a schema that needs more is noticed instead of half-checked. `$ref` resolves
// within a document (`#/json/pointer`) and across the files of one directory by file name or `$id`.

import fs from 'node:fs';
import path from 'node:path';
import { compilePortable, search } from './regex.mjs';
import { pyRepr, short } from './text.mjs';
import { isIntegral } from './json.mjs';
import { jsonEqual, jsonType } from './values.mjs';

export class SchemaError extends Error {}

const ANNOTATIONS = new Set(['title', 'description', '$schema', '$id', '$comment', 'examples', 'default', '$defs', 'format', 'deprecated', 'readOnly', 'writeOnly']);
const KEYWORDS = new Set(['$ref', 'type', 'properties', 'required', 'additionalProperties', 'items', 'prefixItems', 'enum', 'const', 'oneOf', 'anyOf', 'allOf', 'not', 'if', 'then', 'else', 'pattern', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minItems', 'maxItems', 'uniqueItems', 'patternProperties', 'propertyNames', 'contains', 'minProperties', 'maxProperties', 'dependentRequired']);

/** Schemas by file name and by `$id`; `load(dir)` reads every *.json of a directory. */
export class Registry {
  constructor(regexOptions = {}) {
    this.docs = new Map();
    this.regexOptions = regexOptions;
  }

  static fromDir(dir, regexOptions = {}) {
    const registry = new Registry(regexOptions);
    for (const name of fs.readdirSync(dir).sort()) {
      if (!name.endsWith('.json')) continue;
      let doc;
      try {
        doc = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
      } catch (err) {
        throw new SchemaError(`cannot read the schema ${path.join(dir, name)}: ${err.message}`);
      }
      registry.add(name, doc);
    }
    return registry;
  }

  add(name, doc) {
    this.docs.set(name, doc);
    if (doc && typeof doc === 'object' && typeof doc.$id === 'string') this.docs.set(doc.$id, doc);
  }

  /** The schema a reference names: "file.json", "file.json#/$defs/x", or "#/..." inside `base`. */
  resolve(ref, base) {
    const hash = ref.indexOf('#');
    const file = hash < 0 ? ref : ref.slice(0, hash);
    const pointer = hash < 0 ? '' : ref.slice(hash + 1);
    let doc = base;
    if (file) {
      doc = this.docs.get(file) ?? this.docs.get(path.posix.basename(file));
      if (doc === undefined) throw new SchemaError(`$ref ${ref}: no schema named ${file}`);
    }
    if (doc === undefined) throw new SchemaError(`$ref ${ref}: no document to resolve it in`);
    return { doc, schema: pointerGet(doc, pointer, ref) };
  }

  /** A validator function for `ref` (a file name with an optional #pointer). */
  validator(ref) {
    const { doc, schema } = this.resolve(ref, undefined);
    return (value) => this.errors(schema, value, doc);
  }

  /** Every error of `value` against `schema` (inside document `doc`), most relevant first. */
  errors(schema, value, doc) {
    const out = [];
    this.check(schema, value, doc, [], '', out);
    return out;
  }

  check(schema, value, doc, at, schemaPath, out) {
    if (schema === true) return;
    if (schema === false) {
      out.push(err(at, 'False schema does not allow ' + pyRepr(value), 'false'));
      return;
    }
    if (schema === null || typeof schema !== 'object') throw new SchemaError(`not a schema at ${schemaPath || '/'}: ${short(schema)}`);
    for (const key of Object.keys(schema)) {
      if (!KEYWORDS.has(key) && !ANNOTATIONS.has(key)) {
        throw new SchemaError(`the schema keyword ${key} (at ${schemaPath || '/'}) is not supported by this runner`);
      }
    }
    const add = (message, keyword, context) => out.push(err(at, message, keyword, context));
    const sub = (s, v, where, extraAt) => {
      const errs = [];
      this.check(s, v, doc, extraAt === undefined ? at : [...at, extraAt], `${schemaPath}/${where}`, errs);
      return errs;
    };
    if ('$ref' in schema) {
      const { doc: target, schema: resolved } = this.resolve(schema.$ref, doc);
      this.check(resolved, value, target, at, schema.$ref, out);
    }
    const t = jsonType(value);
    if ('type' in schema) {
      const types = Array.isArray(schema.type) ? schema.type : [schema.type];
      if (!types.some((name) => hasType(value, name))) {
        add(`${pyRepr(value)} is not of type ${types.map((x) => pyRepr(x)).join(', ')}`, 'type');
      }
    }
    if ('const' in schema && !jsonEqual(schema.const, value)) add(`${pyRepr(schema.const)} was expected`, 'const');
    if ('enum' in schema && !schema.enum.some((e) => jsonEqual(e, value))) {
      add(`${pyRepr(value)} is not one of ${pyList(schema.enum)}`, 'enum');
    }
    if (t === 'string') {
      const length = Array.from(value).length;
      if ('minLength' in schema && length < schema.minLength) {
        add(schema.minLength === 1 ? `${pyRepr(value)} should be non-empty` : `${pyRepr(value)} is too short`, 'minLength');
      }
      if ('maxLength' in schema && length > schema.maxLength) add(`${pyRepr(value)} is too long`, 'maxLength');
      if ('pattern' in schema) {
        let re;
        try {
          re = compilePortable(schema.pattern, this.regexOptions);
        } catch (e) {
          throw new SchemaError(`the schema pattern ${pyRepr(schema.pattern)} (at ${schemaPath}) is not portable: ${e.message}`);
        }
        if (!search(re, value)) add(`${pyRepr(value)} does not match ${pyRepr(schema.pattern)}`, 'pattern');
      }
    }
    if (t === 'number') {
      if ('minimum' in schema && value < schema.minimum) add(`${value} is less than the minimum of ${schema.minimum}`, 'minimum');
      if ('maximum' in schema && value > schema.maximum) add(`${value} is greater than the maximum of ${schema.maximum}`, 'maximum');
      if ('exclusiveMinimum' in schema && value <= schema.exclusiveMinimum) {
        add(`${value} is less than or equal to the minimum of ${schema.exclusiveMinimum}`, 'exclusiveMinimum');
      }
      if ('exclusiveMaximum' in schema && value >= schema.exclusiveMaximum) {
        add(`${value} is greater than or equal to the maximum of ${schema.exclusiveMaximum}`, 'exclusiveMaximum');
      }
    }
    if (t === 'array') {
      if ('minItems' in schema && value.length < schema.minItems) {
        add(schema.minItems === 1 ? `${short(value)} should be non-empty` : `${short(value)} is too short`, 'minItems');
      }
      if ('maxItems' in schema && value.length > schema.maxItems) add(`${short(value)} is too long`, 'maxItems');
      if (schema.uniqueItems === true) {
        for (let i = 0; i < value.length; i += 1) {
          for (let j = i + 1; j < value.length; j += 1) {
            if (jsonEqual(value[i], value[j])) {
              add(`${short(value)} has non-unique elements`, 'uniqueItems');
              i = value.length;
              break;
            }
          }
        }
      }
      const prefix = schema.prefixItems ?? [];
      prefix.forEach((s, i) => {
        if (i < value.length) out.push(...sub(s, value[i], `prefixItems/${i}`, i));
      });
      if ('items' in schema) {
        for (let i = prefix.length; i < value.length; i += 1) out.push(...sub(schema.items, value[i], 'items', i));
      }
      if ('contains' in schema && !value.some((v) => sub(schema.contains, v, 'contains').length === 0)) {
        add(`${short(value)} does not contain items matching the given schema`, 'contains');
      }
    }
    if (t === 'object') {
      const keys = Object.keys(value);
      for (const name of schema.required ?? []) {
        if (!Object.prototype.hasOwnProperty.call(value, name)) add(`${pyRepr(name)} is a required property`, 'required');
      }
      if ('minProperties' in schema && keys.length < schema.minProperties) {
        add(schema.minProperties === 1 ? `${short(value)} should be non-empty` : `${short(value)} does not have enough properties`, 'minProperties');
      }
      if ('maxProperties' in schema && keys.length > schema.maxProperties) add(`${short(value)} has too many properties`, 'maxProperties');
      for (const [name, needs] of Object.entries(schema.dependentRequired ?? {})) {
        if (!Object.prototype.hasOwnProperty.call(value, name)) continue;
        for (const other of needs) {
          if (!Object.prototype.hasOwnProperty.call(value, other)) add(`${pyRepr(other)} is a dependency of ${pyRepr(name)}`, 'dependentRequired');
        }
      }
      const props = schema.properties ?? {};
      const patterns = Object.entries(schema.patternProperties ?? {}).map(([p, s]) => {
        try {
          return [compilePortable(p, this.regexOptions), s, p];
        } catch (e) {
          throw new SchemaError(`the schema patternProperties key ${pyRepr(p)} is not portable: ${e.message}`);
        }
      });
      const extra = [];
      for (const key of keys) {
        let known = false;
        if (Object.prototype.hasOwnProperty.call(props, key)) {
          known = true;
          out.push(...sub(props[key], value[key], `properties/${key}`, key));
        }
        for (const [re, s, p] of patterns) {
          if (search(re, key)) {
            known = true;
            out.push(...sub(s, value[key], `patternProperties/${p}`, key));
          }
        }
        if ('propertyNames' in schema) out.push(...sub(schema.propertyNames, key, 'propertyNames'));
        if (!known) extra.push(key);
      }
      if ('additionalProperties' in schema && extra.length) {
        if (schema.additionalProperties === false) {
          const list = extra.map((k) => pyRepr(k)).join(', ');
          add(`Additional properties are not allowed (${list} ${extra.length === 1 ? 'was' : 'were'} unexpected)`, 'additionalProperties');
        } else {
          for (const key of extra) out.push(...sub(schema.additionalProperties, value[key], 'additionalProperties', key));
        }
      }
    }
    if ('allOf' in schema) schema.allOf.forEach((s, i) => out.push(...sub(s, value, `allOf/${i}`)));
    if ('anyOf' in schema) {
      const tried = schema.anyOf.map((s, i) => sub(s, value, `anyOf/${i}`));
      if (!tried.some((e) => e.length === 0)) add(`${short(value)} is not valid under any of the given schemas`, 'anyOf', tried.flat());
    }
    if ('oneOf' in schema) {
      const tried = schema.oneOf.map((s, i) => sub(s, value, `oneOf/${i}`));
      const good = tried.filter((e) => e.length === 0).length;
      if (good === 0) add(`${short(value)} is not valid under any of the given schemas`, 'oneOf', tried.flat());
      else if (good > 1) add(`${short(value)} is valid under each of ${good} of the given schemas`, 'oneOf');
    }
    if ('not' in schema && sub(schema.not, value, 'not').length === 0) {
      add(`${short(value)} should not be valid under ${short(schema.not)}`, 'not');
    }
    if ('if' in schema) {
      if (sub(schema.if, value, 'if').length === 0) {
        if ('then' in schema) out.push(...sub(schema.then, value, 'then'));
      } else if ('else' in schema) {
        out.push(...sub(schema.else, value, 'else'));
      }
    }
  }
}

function err(at, message, keyword, context = []) {
  return { path: at, message, keyword, context };
}

function pyList(values) {
  return '[' + values.map((v) => pyRepr(v)).join(', ') + ']';
}

function hasType(value, name) {
  const t = jsonType(value);
  if (name === 'integer') return t === 'number' && isIntegral(value);
  return t === name;
}

function pointerGet(doc, pointer, ref) {
  if (pointer === '' || pointer === '/') return doc;
  if (!pointer.startsWith('/')) throw new SchemaError(`$ref ${ref}: only JSON pointers (#/...) are supported`);
  let node = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, part)) {
      throw new SchemaError(`$ref ${ref}: nothing at ${pointer}`);
    }
    node = node[part];
  }
  return node;
}

const WEAK = new Set(['anyOf', 'oneOf']);

/** The most telling error of a list (like jsonschema's best_match): the shallowest, preferring
 * strong keywords, then descending into anyOf/oneOf to the deepest alternative's error. */
export function bestError(errors) {
  if (!errors.length) return null;
  const key = (e) => [-e.path.length, WEAK.has(e.keyword) ? 0 : 1];
  const better = (a, b) => {
    const [ka, kb] = [key(a), key(b)];
    return ka[0] !== kb[0] ? ka[0] > kb[0] : ka[1] > kb[1];
  };
  let best = errors[0];
  for (const e of errors.slice(1)) if (better(e, best)) best = e;
  while (best.context && best.context.length) {
    // the deepest error among the alternatives says the most
    let pick = best.context[0];
    for (const e of best.context.slice(1)) {
      if (e.path.length > pick.path.length || (e.path.length === pick.path.length && !WEAK.has(e.keyword) && WEAK.has(pick.keyword))) pick = e;
    }
    best = pick;
  }
  return best;
}

/** "message (at /a/b)" for an error, or the message alone at the root. */
export function describe(error) {
  return error.message + (error.path.length ? `, at /${error.path.join('/')}` : '');
}
