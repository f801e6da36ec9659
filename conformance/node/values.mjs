// JSON value helpers: the JSON type of a value and JSON equality (1 equals 1.0; true is not 1).

import { copyJson, isJsonNumber, keysOf, numbersEqual } from './json.mjs';

export function jsonType(value) {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'number' || isJsonNumber(value)) return 'number';
  if (typeof value === 'string') return 'string';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object') return 'object';
  return typeof value;
}

export function jsonEqual(a, b) {
  const t = jsonType(a);
  if (t !== jsonType(b)) return false;
  if (t === 'array') return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (t === 'number') return numbersEqual(a, b);
  if (t === 'object') {
    const ka = keysOf(a);
    const kb = keysOf(b);
    return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual(a[k], b[k]));
  }
  return a === b;
}

export function deepCopy(value) {
  return value === undefined ? undefined : copyJson(value);
}
