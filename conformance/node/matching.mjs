// Expected-vs-actual matching, as conformance/runner/matching.py: matchers, captures and the
// frame rules. `match` returns mismatches (empty = match) and stores `$capture`s into `captures`;
// a problem with the scenario itself throws ScenarioError.

import { compilePortable, RegexError, search } from './regex.mjs';
import { pyDumps, short } from './text.mjs';
import { isIntegral, isJsonNumber, keysOf, withOrder } from './json.mjs';
import { deepCopy, jsonEqual, jsonType } from './values.mjs';

export class ScenarioError extends Error {}

export const MATCHERS = ['$any', '$absent', '$type', '$regex', '$contains', '$len', '$capture', '$not', '$eq', '$extract'];
const TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'];
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const REF = /\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const WHOLE_REF = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

export const regexOptions = { python: false }; // set once by the CLI (--python-regex)

export class Mismatch {
  constructor(path, message) {
    this.path = path;
    this.message = message;
  }

  toString() {
    return `${this.path}: ${this.message}`;
  }
}

const own = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !isJsonNumber(v);

export function isMatcher(value) {
  return isObject(value) && Object.keys(value).length > 0 && Object.keys(value).every((k) => k.startsWith('$') && !k.startsWith('$$'));
}

const isMatcherKey = (k) => typeof k === 'string' && k.startsWith('$') && !k.startsWith('$$');

function child(path, key) {
  return PLAIN_KEY.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

function hasType(value, name) {
  if (name === 'integer') return jsonType(value) === 'number' && isIntegral(value);
  return jsonType(value) === name;
}

// ----------------------------------------------------------------------------- checking

export function checkExpected(expected, path = '$', asValue = false) {
  if (Array.isArray(expected)) {
    expected.forEach((item, i) => checkExpected(item, `${path}[${i}]`));
    return;
  }
  if (!isObject(expected)) return;
  if (!isMatcher(expected)) {
    if (Object.keys(expected).some(isMatcherKey)) {
      throw new ScenarioError(`${path}: an object mixes matcher keys ($...) with plain keys; write a literal key that starts with $ as $$key`);
    }
    for (const [key, value] of Object.entries(expected)) {
      checkExpected(value, child(path, key.startsWith('$$') ? key.slice(1) : key), true);
    }
    return;
  }
  const unknown = Object.keys(expected).filter((k) => !MATCHERS.includes(k)).sort();
  if (unknown.length) throw new ScenarioError(`${path}: unknown matcher ${unknown.join(', ')} (known: ${MATCHERS.join(', ')})`);
  if (own(expected, '$absent')) {
    if (!(Object.keys(expected).length === 1 && expected.$absent === true)) {
      throw new ScenarioError(`${path}: $absent must be written alone as {$absent: true}`);
    }
    if (!asValue) throw new ScenarioError(`${path}: $absent is only meaningful as the value of an object key`);
  }
  for (const [key, arg] of Object.entries(expected)) checkMatcherArg(key, arg, path);
}

function checkMatcherArg(key, arg, path) {
  const where = `${path}: ${key}`;
  if (key === '$any' && arg !== true) throw new ScenarioError(`${where} takes true`);
  if (key === '$type') {
    const names = Array.isArray(arg) ? arg : [arg];
    if (!names.length || names.some((n) => !TYPES.includes(n))) {
      throw new ScenarioError(`${where} takes one of ${TYPES.join(', ')} or a list, got ${short(arg)}`);
    }
  }
  if (key === '$regex') {
    if (typeof arg !== 'string') throw new ScenarioError(`${where} takes a string`);
    if (!arg.includes('${')) compile(arg, where);
  }
  if (key === '$extract') checkExtract(arg, where);
  if (key === '$capture' && !(typeof arg === 'string' && IDENT.test(arg))) {
    throw new ScenarioError(`${where} takes an identifier (letters, digits, _), got ${short(arg)}`);
  }
  if (key === '$len' && !Number.isInteger(arg)) {
    if (!isMatcher(arg)) throw new ScenarioError(`${where} takes an integer or a matcher`);
    checkExpected(arg, `${path}.length`);
  }
  if (key === '$not') checkExpected(arg, path);
  if (key === '$contains') (Array.isArray(arg) ? arg : [arg]).forEach((item, i) => checkExpected(item, `${path}.$contains[${i}]`));
}

/** `{$extract: {regex: P, name: N}}`: P a portable regex, N an identifier, nothing else. */
function checkExtract(arg, where) {
  const keys = isObject(arg) ? Object.keys(arg).sort().join(',') : '';
  if (keys !== 'name,regex' || typeof arg.regex !== 'string') {
    throw new ScenarioError(`${where} takes {regex: PATTERN, name: NAME}, got ${short(arg)}`);
  }
  if (!(typeof arg.name === 'string' && IDENT.test(arg.name))) {
    throw new ScenarioError(`${where} name takes an identifier (letters, digits, _), got ${short(arg.name)}`);
  }
  if (!arg.regex.includes('${')) compile(arg.regex, where);
}

/**
 * The text `$extract` stores: the first group of the first match (the whole match when the pattern
 * has no group, "" when the group took no part); null when nothing matches.
 */
export function extracted(re, text) {
  re.lastIndex = 0;
  const found = re.exec(text);
  if (found === null) return null;
  return found.length > 1 ? (found[1] ?? '') : found[0];
}

function compile(pattern, where) {
  try {
    return compilePortable(pattern, regexOptions);
  } catch (err) {
    if (err instanceof RegexError) {
      throw new ScenarioError(`${where}: invalid regular expression ${JSON.stringify(pattern)}: ${err.message}`);
    }
    throw err;
  }
}

// ----------------------------------------------------------------------------- matching

export function match(expected, actual, captures, path = '$') {
  if (isMatcher(expected)) {
    if (own(expected, '$absent')) throw new ScenarioError(`${path}: $absent is only meaningful as the value of an object key`);
    return matchMatcher(expected, actual, captures, path);
  }
  if (isObject(expected)) return matchDict(expected, actual, captures, path);
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [new Mismatch(path, `expected an array, got ${short(actual)}`)];
    if (expected.length !== actual.length) {
      return [new Mismatch(path, `expected an array of ${expected.length} items, got ${actual.length}: ${short(actual)}`)];
    }
    const out = [];
    expected.forEach((exp, i) => out.push(...match(exp, actual[i], captures, `${path}[${i}]`)));
    return out;
  }
  if (jsonEqual(expected, actual)) return [];
  return [new Mismatch(path, `expected ${short(expected)}, got ${short(actual)}`)];
}

function matchDict(expected, actual, captures, path) {
  if (Object.keys(expected).some(isMatcherKey)) throw new ScenarioError(`${path}: an object mixes matcher keys ($...) with plain keys`);
  if (!isObject(actual)) return [new Mismatch(path, `expected an object, got ${short(actual)}`)];
  const out = [];
  for (const [key, exp] of Object.entries(expected)) {
    const real = key.startsWith('$$') ? key.slice(1) : key;
    const sub = child(path, real);
    if (isMatcher(exp) && own(exp, '$absent')) {
      checkExpected(exp, sub, true);
      if (own(actual, real)) out.push(new Mismatch(sub, `expected no such key, got ${short(actual[real])}`));
    } else if (!own(actual, real)) {
      out.push(new Mismatch(sub, `missing key (expected ${short(exp)})`));
    } else {
      out.push(...match(exp, actual[real], captures, sub));
    }
  }
  return out;
}

function lengthOf(value) {
  if (typeof value === 'string') return Array.from(value).length;
  if (Array.isArray(value)) return value.length;
  return Object.keys(value).length;
}

function matchMatcher(expected, actual, captures, path) {
  checkExpected(expected, path);
  const out = [];
  let pulled = null; // what `$extract` found
  for (const [key, arg] of Object.entries(expected)) {
    if (key === '$type') {
      const names = Array.isArray(arg) ? arg : [arg];
      if (!names.some((n) => hasType(actual, n))) {
        out.push(new Mismatch(path, `expected type ${names.join(' or ')}, got ${jsonType(actual)} ${short(actual)}`));
      }
    } else if (key === '$regex') {
      if (typeof actual !== 'string' || !search(compile(arg, `${path}: $regex`), actual)) {
        out.push(new Mismatch(path, `expected a string matching /${arg}/, got ${short(actual)}`));
      }
    } else if (key === '$contains') {
      out.push(...matchContains(arg, actual, captures, path));
    } else if (key === '$len') {
      if (!(typeof actual === 'string' || Array.isArray(actual) || isObject(actual))) {
        out.push(new Mismatch(path, `expected something with a length, got ${short(actual)}`));
      } else if (match(arg, lengthOf(actual), { ...captures }, `${path}.length`).length) {
        out.push(new Mismatch(path, `expected length ${short(arg)}, got ${lengthOf(actual)}: ${short(actual)}`));
      }
    } else if (key === '$not') {
      if (!match(arg, actual, { ...captures }, path).length) {
        out.push(new Mismatch(path, `expected anything but ${short(arg)}, got ${short(actual)}`));
      }
    } else if (key === '$eq' && !jsonEqual(arg, actual)) {
      out.push(new Mismatch(path, `expected exactly ${short(arg)}, got ${short(actual)}`));
    } else if (key === '$extract') {
      const found = typeof actual === 'string' ? extracted(compile(arg.regex, `${path}: $extract`), actual) : null;
      if (found === null) out.push(new Mismatch(path, `expected a string matching /${arg.regex}/, got ${short(actual)}`));
      else pulled = found;
    }
  }
  if (!out.length && own(expected, '$capture')) captures[expected.$capture] = deepCopy(actual);
  if (!out.length && own(expected, '$extract')) captures[expected.$extract.name] = pulled;
  return out;
}

function matchContains(arg, actual, captures, path) {
  if (typeof actual === 'string') {
    if (typeof arg !== 'string') return [new Mismatch(path, `expected an array containing ${short(arg)}, got ${short(actual)}`)];
    if (actual.includes(arg)) return [];
    return [new Mismatch(path, `expected a string containing ${short(arg)}, got ${short(actual, 1000)}`)];
  }
  if (!Array.isArray(actual)) {
    return [new Mismatch(path, `expected a string or an array containing ${short(arg)}, got ${short(actual)}`)];
  }
  const out = [];
  for (const item of Array.isArray(arg) ? arg : [arg]) {
    const tried = [];
    let found = false;
    for (let i = 0; i < actual.length; i += 1) {
      const trial = { ...captures };
      const problems = match(item, actual[i], trial, `${path}[${i}]`);
      if (!problems.length) {
        Object.assign(captures, trial);
        found = true;
        break;
      }
      tried.push(problems);
    }
    if (!found) out.push(new Mismatch(path, `no element matches ${short(item)}${closest(tried)}`));
  }
  return out;
}

function closest(tried, limit = 3) {
  if (!tried.length) return ' (the array is empty)';
  const fewest = Math.min(...tried.map((p) => p.length));
  const best = tried.filter((p) => p.length === fewest).slice(0, limit);
  return '; closest: ' + best.map((p) => p.map(String).join('; ')).join(' | ');
}

// ----------------------------------------------------------------------------- captures

export function substitute(value, captures, path = '$') {
  if (typeof value === 'string') return substituteStr(value, captures, path);
  if (Array.isArray(value)) return value.map((v, i) => substitute(v, captures, `${path}[${i}]`));
  if (isObject(value)) {
    const out = {};
    const keys = [];
    for (const key of keysOf(value)) {
      let newKey = substituteStr(key, captures, path);
      if (typeof newKey !== 'string') newKey = pyDumps(newKey);
      if (!Object.prototype.hasOwnProperty.call(out, newKey)) keys.push(newKey);
      out[newKey] = substitute(value[key], captures, child(path, newKey));
    }
    return withOrder(out, keys);
  }
  return value;
}

function lookup(name, captures, path) {
  if (!own(captures, name)) {
    const known = Object.keys(captures).sort().join(', ') || 'none';
    throw new ScenarioError(`${path}: unknown capture \${${name}} (captured so far: ${known}); write $\${${name}} for a literal \${${name}}`);
  }
  return captures[name];
}

function substituteStr(text, captures, path) {
  const whole = WHOLE_REF.exec(text);
  if (whole) return deepCopy(lookup(whole[1], captures, path));
  return text.replace(REF, (m, dollar, name) => {
    if (dollar) return '${' + name + '}';
    const value = lookup(name, captures, path);
    return typeof value === 'string' ? value : pyDumps(value);
  });
}

export function references(value) {
  const found = new Set();
  const walk = (v) => {
    if (typeof v === 'string') {
      for (const m of v.matchAll(REF)) if (!m[1]) found.add(m[2]);
    } else if (Array.isArray(v)) {
      v.forEach(walk);
    } else if (isObject(v)) {
      for (const [k, x] of Object.entries(v)) {
        walk(k);
        walk(x);
      }
    }
  };
  walk(value);
  return found;
}

export function capturedNames(expected) {
  const found = new Set();
  const walk = (e) => {
    if (Array.isArray(e)) e.forEach(walk);
    else if (isMatcher(e)) {
      if (typeof e.$capture === 'string') found.add(e.$capture);
      if (isObject(e.$extract) && typeof e.$extract.name === 'string') found.add(e.$extract.name);
      if (own(e, '$contains')) walk(e.$contains);
    } else if (isObject(e)) Object.values(e).forEach(walk);
  };
  walk(expected);
  return found;
}

// ----------------------------------------------------------------------------- frames

function idKey(expected) {
  if (isObject(expected) && !isMatcher(expected) && own(expected, 'id')) {
    const ident = expected.id;
    if (ident === null || ['string', 'number', 'boolean'].includes(typeof ident)) return pyDumps(ident);
  }
  return null;
}

export function matchFrames(expected, actual, captures, only = false) {
  return assignFrames(expected, actual, captures, { only })[0];
}

/** [problems, used: Map(actual index -> expected index)] */
export function assignFrames(expected, actual, captures, { only = false, numbers = null } = {}) {
  const shown = numbers ?? actual.map((_, i) => i);
  const used = new Map();
  const last = new Map();
  const problems = [];
  const order = [...expected.keys()].filter((i) => idKey(expected[i]) !== null);
  order.push(...[...expected.keys()].filter((i) => idKey(expected[i]) === null));
  for (const i of order) {
    const exp = expected[i];
    const key = idKey(exp);
    const start = key !== null && last.has(key) ? last.get(key) + 1 : 0;
    let found = false;
    for (let j = start; j < actual.length; j += 1) {
      if (used.has(j)) continue;
      const trial = { ...captures };
      if (!match(exp, actual[j], trial).length) {
        Object.assign(captures, trial);
        used.set(j, i);
        if (key !== null) last.set(key, j);
        found = true;
        break;
      }
    }
    if (!found) problems.push(explainUnmatched(i, exp, actual, used, captures, shown));
  }
  if (only) {
    actual.forEach((frame, j) => {
      if (!used.has(j)) problems.push(`actual frame #${shown[j]} was not expected (only: true): ${short(frame, 400)}`);
    });
  }
  return [problems, used];
}

function explainUnmatched(i, exp, actual, used, captures, shown) {
  const lines = [`expected frame [${i}] matched no actual frame: ${short(exp, 400)}`];
  const key = idKey(exp);
  let candidates;
  if (key !== null) {
    candidates = [...actual.keys()].filter((j) => isObject(actual[j]) && idKey(actual[j]) === key);
    if (!candidates.length) lines.push(`    no actual frame has id ${key}`);
  } else {
    candidates = [...actual.keys()];
  }
  for (const j of candidates) {
    const problems = match(exp, actual[j], { ...captures });
    if (!problems.length) {
      const why = used.has(j)
        ? `already matched by expected frame [${used.get(j)}]`
        : 'comes before a frame already matched for the same id (frames with the same id must keep the expected order)';
      lines.push(`    actual frame #${shown[j]} matches but ${why}`);
    } else {
      lines.push(`    actual frame #${shown[j]}: ` + problems.map(String).join('; '));
    }
  }
  return lines.join('\n');
}
