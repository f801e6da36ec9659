// The portable regular-expression subset of `$regex` and schema `pattern`s (conformance/FORMAT.md):
// a pattern is parsed, refused when it leaves the subset (a broken scenario), and compiled as
// `new RegExp(p, "u")`, whose meaning the subset takes: `$` is the end of the text, `.` stops at
// line terminators, `\s` is ECMAScript white space. Search is unanchored.
//
// `python: true` (the runner's --python-regex) is a transitional mode for scenarios written before
// the subset: leading inline flags (?ims), lookaround, \A and \Z are accepted and given Python's
// meaning (`$` also before a final newline, `.` anything but \n).

export class RegexError extends Error {}

const SYNTAX = new Set('^$\\.*+?()[]{}|/'.split(''));
const CLASS_ESCAPES = { d: '\\d', D: '\\D', w: '\\w', W: '\\W', n: '\\n', t: '\\t', r: '\\r', f: '\\f', v: '\\v' };
const ASCII_SPACE = '\\t\\n\\v\\f\\r ';

function isPunct(c) {
  return c.length === 1 && /[!-\/:-@\[-`{-~]/.test(c);
}

class Parser {
  constructor(pattern, python) {
    this.chars = Array.from(pattern);
    this.i = 0;
    this.python = python;
    this.flags = '';
  }

  fail(what) {
    throw new RegexError(`${what} at position ${this.i} (the portable subset: see conformance/FORMAT.md)`);
  }

  peek(k = 0) { return this.chars[this.i + k]; }

  parse() {
    if (this.python) this.inlineFlags();
    const out = this.alternation();
    if (this.i < this.chars.length) this.fail(`unbalanced ${this.peek()}`);
    return out;
  }

  inlineFlags() {
    const m = /^\(\?([aiLmsux]+)\)/.exec(this.chars.join(''));
    if (!m) return;
    for (const f of m[1]) {
      if (f === 'i' || f === 'm' || f === 's') this.flags += f;
      else if (f !== 'u' && f !== 'a') this.fail(`inline flag ${f} has no portable meaning`);
    }
    this.i += Array.from(m[0]).length;
  }

  alternation() {
    const parts = [this.sequence()];
    while (this.peek() === '|') {
      this.i += 1;
      parts.push(this.sequence());
    }
    return parts.join('|');
  }

  sequence() {
    let out = '';
    while (this.i < this.chars.length && this.peek() !== '|' && this.peek() !== ')') {
      const [atom, quantifiable] = this.atom();
      const q = this.quantifier();
      if (q && !quantifiable) this.fail('nothing to repeat');
      out += atom + q;
    }
    return out;
  }

  quantifier() {
    const c = this.peek();
    let q = '';
    if (c === '*' || c === '+' || c === '?') {
      q = c;
      this.i += 1;
    } else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.chars.slice(this.i, this.i + 30).join(''));
      if (!m) {
        if (this.python) return '';
        this.fail('a `{` that is not a quantifier {n}, {n,} or {n,m} (escape it)');
      }
      if (m[3] !== undefined && m[3] !== '' && Number(m[3]) < Number(m[1])) this.fail('a {n,m} with m < n');
      q = m[0];
      this.i += m[0].length;
    } else {
      return '';
    }
    if (this.peek() === '?') {
      q += '?';
      this.i += 1;
    }
    const n = this.peek();
    if (n === '*' || n === '+' || n === '?' || (n === '{' && (!this.python || /^\{\d+(,\d*)?\}/.test(this.chars.slice(this.i, this.i + 30).join(''))))) {
      this.fail('a repeated quantifier (possessive or nested quantifiers are not portable)');
    }
    return q;
  }

  atom() {
    const c = this.peek();
    if (c === '(') return [this.group(), true];
    if (c === '[') return [this.klass(), true];
    if (c === '\\') return this.escape();
    this.i += 1;
    if (c === '.') return [this.python && !this.flags.includes('s') ? '[^\\n]' : '.', true];
    if (c === '^') return ['^', false];
    if (c === '$') return [this.python && !this.flags.includes('m') ? '(?=\\n?(?![\\s\\S]))' : '$', false];
    if ('*+?'.includes(c)) this.fail(`a lone \`${c}\` (escape it)`);
    if ('{}]'.includes(c)) {
      if (!this.python) this.fail(`a lone \`${c}\` (escape it)`);
      return ['\\' + c, true];
    }
    if (c === '/') return ['\\/', true];
    return [c, true];
  }

  group() {
    this.i += 1; // (
    let open = '(';
    let quantifiable = true;
    if (this.peek() === '?') {
      const two = (this.peek(1) ?? '') + (this.peek(2) ?? '');
      if (this.peek(1) === ':') {
        open = '(?:';
        this.i += 2;
      } else if (this.python && (this.peek(1) === '=' || this.peek(1) === '!')) {
        open = '(?' + this.peek(1);
        this.i += 2;
        quantifiable = false;
      } else if (this.python && (two === '<=' || two === '<!')) {
        open = '(?' + two;
        this.i += 3;
        quantifiable = false;
      } else {
        this.fail('a (?...) group other than (?:...) (lookaround, named groups and inline flags are not portable)');
      }
    }
    const inner = this.alternation();
    if (this.peek() !== ')') this.fail('missing )');
    this.i += 1;
    return open + inner + ')' + (quantifiable ? '' : '');
  }

  escape() {
    const c = this.peek(1);
    if (c === undefined) this.fail('a trailing backslash');
    this.i += 2;
    if (c === 's' || c === 'S') return [this.python ? (c === 's' ? `[${ASCII_SPACE}]` : `[^${ASCII_SPACE}]`) : '\\' + c, true];
    if (c in CLASS_ESCAPES) return [CLASS_ESCAPES[c], true];
    if (c === 'b' || c === 'B') return ['\\' + c, false];
    if (this.python && c === 'A') return ['(?<![\\s\\S])', false];
    if (this.python && c === 'Z') return ['(?![\\s\\S])', false];
    if (SYNTAX.has(c)) return ['\\' + c, true];
    if (this.python && isPunct(c)) return [c, true];
    this.i -= 2;
    return this.fail(`the escape \\${c} is not portable`);
  }

  klass() {
    this.i += 1; // [
    let out = '[';
    if (this.peek() === '^') {
      out += '^';
      this.i += 1;
    }
    if (this.peek() === ']') this.fail('a ] first in a class (write \\])');
    let items = 0;
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.fail('missing ] of a character class');
      if (c === ']') {
        this.i += 1;
        break;
      }
      if (c === '[' && !this.python) this.fail('an unescaped `[` inside a class');
      if (c === '\\' && this.peek(1) === 'S' && out.startsWith('[^')) this.fail('`\\S` inside a negated class');
      const [first, single] = this.classAtom();
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== undefined) {
        this.i += 1;
        const [last, single2] = this.classAtom();
        if (single === null || single2 === null) this.fail('a range with a class escape');
        if (single.codePointAt(0) > single2.codePointAt(0)) this.fail('a range out of order');
        out += first + '-' + last;
      } else {
        out += first;
      }
      items += 1;
    }
    if (!items) this.fail('an empty class');
    return out + ']';
  }

  /** One class member: [JS text, the character it stands for (null for \d etc.)]. */
  classAtom() {
    const c = this.peek();
    if (c !== '\\') {
      this.i += 1;
      if (c === '/' || c === '[') return ['\\' + c, c];
      return [c, c];
    }
    const e = this.peek(1);
    if (e === undefined) this.fail('a trailing backslash');
    this.i += 2;
    if (e === 'b') this.fail('`\\b` inside a class');
    if (e === 's') return [this.python ? ASCII_SPACE : '\\s', null];
    if (e === 'S') return ['\\S', null];
    if (e === 'd' || e === 'D' || e === 'w' || e === 'W') return ['\\' + e, null];
    const simple = { n: '\n', t: '\t', r: '\r', f: '\f', v: '\v' };
    if (e in simple) return ['\\' + e, simple[e]];
    if (SYNTAX.has(e) || e === '-') return ['\\' + e, e];
    if (this.python && isPunct(e)) return [e, e];
    this.i -= 2;
    return this.fail(`the escape \\${e} is not portable in a class`);
  }
}

const cache = new Map();

/** The RegExp for a portable pattern; throws RegexError when it is not in the subset. */
export function compilePortable(pattern, { python = false } = {}) {
  const key = (python ? 'p:' : 's:') + pattern;
  let re = cache.get(key);
  if (re === undefined) {
    const parser = new Parser(pattern, python);
    const source = parser.parse();
    try {
      re = new RegExp(source, 'u' + parser.flags);
    } catch (err) {
      throw new RegexError(`${err.message}`);
    }
    cache.set(key, re);
  }
  return re;
}

/** Whether `re` finds a match anywhere in `text` (an unanchored search). */
export function search(re, text) {
  re.lastIndex = 0;
  return re.test(text);
}
