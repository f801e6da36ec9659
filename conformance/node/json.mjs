// Lossless JSON for the runner (conformance/FORMAT.md §10 "The bytes a runner sends"): JSON.parse
// turns a 400-digit integer into Infinity, 2.0 into 2 and -0.0 into 0, and puts the key "10" before
// "b"; the pytest runner keeps all of them. parseJson keeps what JSON.parse loses, and dumpJson writes
// a value exactly as Python's json.dumps(value, ensure_ascii=False) does, so both runners send the
// implementation the same bytes.

const ORDER = Symbol('json key order');

/**
 * A number a JS number cannot carry: an integer beyond 2^53 (kept as its exact digits) or a float
 * whose value is integral (1.0, 1e16, -0.0; a JS number would be written as an integer).
 * Compares and computes as its value (valueOf); toString is its JSON text.
 */
export class JsonNumber {
  constructor(kind, value, digits = null) {
    this.kind = kind; // 'int' | 'float'
    this.value = value; // the nearest double
    this.digits = digits; // the exact decimal digits of an 'int'
    Object.freeze(this);
  }

  valueOf() {
    return this.value;
  }

  toString() {
    return this.kind === 'int' ? this.digits : floatRepr(this.value);
  }
}

export const isJsonNumber = (v) => v instanceof JsonNumber;
export const isNumber = (v) => typeof v === 'number' || v instanceof JsonNumber;
/** A JSON object (not an array, not null, not a JsonNumber). */
export const isJsonObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof JsonNumber);

/** An integral value (2 and 2.0 alike), as the pytest runner's integer test. */
export function isIntegral(v) {
  if (v instanceof JsonNumber) return v.kind === 'int' || Number.isInteger(v.value);
  return typeof v === 'number' && Number.isInteger(v);
}

/** Equality of two JSON numbers by value, exact for big integers (Python's int/float comparison). */
export function numbersEqual(a, b) {
  const big = (v) => (v instanceof JsonNumber && v.kind === 'int' ? BigInt(v.digits) : null);
  const ba = big(a);
  const bb = big(b);
  if (ba === null && bb === null) return Number(a) === Number(b);
  const exact = (v, bv) => {
    if (bv !== null) return bv;
    const n = Number(v);
    return Number.isInteger(n) ? BigInt(n) : null;
  };
  const xa = exact(a, ba);
  const xb = exact(b, bb);
  return xa !== null && xb !== null && xa === xb;
}

/** An object's keys in the order of its JSON text (JS puts integer-like keys first). */
export function keysOf(obj) {
  return obj[ORDER] ?? Object.keys(obj);
}

/** Record `keys` as the order of `obj` when JS would iterate them otherwise. */
export function withOrder(obj, keys) {
  const natural = Object.keys(obj);
  if (natural.length === keys.length && natural.every((k, i) => k === keys[i])) return obj;
  Object.defineProperty(obj, ORDER, { value: keys, enumerable: false });
  return obj;
}

/** A deep copy keeping JsonNumbers and key order. */
export function copyJson(value) {
  if (Array.isArray(value)) return value.map(copyJson);
  if (isJsonObject(value)) {
    const keys = keysOf(value);
    const out = {};
    for (const k of keys) out[k] = copyJson(value[k]);
    return withOrder(out, keys);
  }
  return value;
}

function numberFrom(text) {
  if (!/[.eE]/.test(text)) {
    const n = Number(text);
    if (Number.isSafeInteger(n)) return n === 0 ? 0 : n; // "-0" is the integer 0
    return new JsonNumber('int', n, BigInt(text).toString());
  }
  const n = Number(text);
  if (Number.isInteger(n) || !Number.isFinite(n) || Object.is(n, -0)) return new JsonNumber('float', n);
  return n;
}

/** JSON.parse, keeping big integers, integral floats and key order. Throws JSON.parse's errors. */
export function parseJson(text) {
  const plain = JSON.parse(text); // the errors (and their messages) are JSON.parse's
  if (plain === null || typeof plain !== 'object') {
    return typeof plain === 'number' ? numberFrom(text.trim()) : plain;
  }
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i += 1;
  };
  const string = () => {
    const start = i;
    i += 1;
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i += 1;
    return JSON.parse(text.slice(start, i));
  };
  const value = () => {
    ws();
    const c = text[i];
    if (c === '{') {
      i += 1;
      const out = {};
      const keys = [];
      ws();
      if (text[i] === '}') {
        i += 1;
        return out;
      }
      for (;;) {
        ws();
        const key = string();
        ws();
        i += 1; // ':'
        const v = value();
        if (!Object.prototype.hasOwnProperty.call(out, key)) keys.push(key);
        out[key] = v;
        ws();
        if (text[i] === ',') i += 1;
        else {
          i += 1; // '}'
          return withOrder(out, keys);
        }
      }
    }
    if (c === '[') {
      i += 1;
      const out = [];
      ws();
      if (text[i] === ']') {
        i += 1;
        return out;
      }
      for (;;) {
        out.push(value());
        ws();
        if (text[i] === ',') i += 1;
        else {
          i += 1; // ']'
          return out;
        }
      }
    }
    if (c === '"') return string();
    if (text.startsWith('true', i)) {
      i += 4;
      return true;
    }
    if (text.startsWith('false', i)) {
      i += 5;
      return false;
    }
    if (text.startsWith('null', i)) {
      i += 4;
      return null;
    }
    const m = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/y;
    m.lastIndex = i;
    const found = m.exec(text);
    i = m.lastIndex;
    return numberFrom(found[0]);
  };
  return value();
}

/** Python's repr() of a float: the shortest round-trip digits, positional for 1e-4 <= |x| < 1e16. */
export function floatRepr(x) {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'Infinity' : '-Infinity';
  const sign = x < 0 || Object.is(x, -0) ? '-' : '';
  const [mantissa, exp] = Math.abs(x).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const e = Number(exp);
  if (e >= -4 && e < 16) {
    if (e >= 0) {
      const whole = digits.slice(0, e + 1).padEnd(e + 1, '0');
      const frac = digits.slice(e + 1) || '0';
      return `${sign}${whole}.${frac}`;
    }
    return `${sign}0.${'0'.repeat(-e - 1)}${digits}`;
  }
  const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${m}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
}

function numberText(v) {
  if (v instanceof JsonNumber) return v.toString();
  if (Number.isInteger(v)) return Object.is(v, -0) ? '0' : String(v);
  return floatRepr(v);
}

/**
 * Python's json.dumps(value, ensure_ascii=False): separators ", " and ": " (with `indent`, "," and
 * ": " and a newline before each member), keys in their order, numbers as above, strings with only
 * `"`, `\` and control characters escaped.
 */
export function dumpJson(value, indent = null, depth = 0) {
  if (value === null || value === undefined) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (typeof value === 'number' || value instanceof JsonNumber) return numberText(value);
  if (typeof value === 'string') return JSON.stringify(value);
  const items = Array.isArray(value)
    ? value.map((v) => dumpJson(v, indent, depth + 1))
    : typeof value === 'object'
      ? keysOf(value).map((k) => `${JSON.stringify(k)}: ${dumpJson(value[k], indent, depth + 1)}`)
      : null;
  if (items === null) return JSON.stringify(String(value));
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (!items.length) return open + close;
  if (indent === null) return open + items.join(', ') + close;
  const pad = '\n' + ' '.repeat(indent * (depth + 1));
  return open + pad + items.join(',' + pad) + '\n' + ' '.repeat(indent * depth) + close;
}
