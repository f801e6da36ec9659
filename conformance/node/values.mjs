// JSON value helpers: the JSON type of a value and JSON equality (1 equals 1.0; true is not 1).

export function jsonType(value) {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'string') return 'string';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object') return 'object';
  return typeof value;
}

export function jsonEqual(a, b) {
  const t = jsonType(a);
  if (t !== jsonType(b)) return false;
  if (t === 'array') return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (t === 'object') {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual(a[k], b[k]));
  }
  return a === b;
}

export function deepCopy(value) {
  return value === undefined ? undefined : structuredClone(value);
}
