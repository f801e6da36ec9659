// Text helpers shared by the runner's modules: a shell-word splitter and quoter compatible with
// Python's shlex (the --impl option and the commands shown in reports), and Python-style one-line
// JSON (`json.dumps` with ", " and ": " separators), so reports read like the pytest runner's.

import { dumpJson } from './json.mjs';

/** Split `text` into words like Python's shlex.split (POSIX mode, no comments). */
export function shlexSplit(text) {
  const words = [];
  let word = null;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      if (word !== null) { words.push(word); word = null; }
      i += 1;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new Error('No closing quotation');
      word = (word ?? '') + text.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      word = word ?? '';
      i += 1;
      for (;;) {
        if (i >= text.length) throw new Error('No closing quotation');
        const d = text[i];
        if (d === '"') { i += 1; break; }
        if (d === '\\' && i + 1 < text.length && '\\"$`\n'.includes(text[i + 1])) {
          word += text[i + 1];
          i += 2;
        } else {
          word += d;
          i += 1;
        }
      }
    } else if (c === '\\') {
      if (i + 1 >= text.length) throw new Error('No escaped character');
      word = (word ?? '') + text[i + 1];
      i += 2;
    } else {
      word = (word ?? '') + c;
      i += 1;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/** Quote one word for a POSIX shell like Python's shlex.quote. */
export function shlexQuote(word) {
  if (word === '') return "''";
  if (!/[^\w@%+=:,./-]/.test(word) && /^[\x00-\x7f]*$/.test(word)) return word;
  return "'" + word.replace(/'/g, "'\"'\"'") + "'";
}

export function shlexJoin(words) {
  return words.map(shlexQuote).join(' ');
}

/** Python's json.dumps(value, ensure_ascii=False): ", " and ": " separators (json.mjs dumpJson). */
export function pyDumps(value) {
  return dumpJson(value);
}

/** A one-line JSON rendering of `value`, cut to `limit` characters. */
export function short(value, limit = 200) {
  const text = pyDumps(value);
  return text.length <= limit ? text : text.slice(0, limit - 3) + '...';
}

/** Python's repr() of a string (single quotes unless the text has one and no double quote). */
export function pyRepr(value) {
  if (typeof value !== 'string') return pyDumps(value);
  const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of value) {
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch.codePointAt(0) < 0x20 || ch.codePointAt(0) === 0x7f) {
      out += '\\x' + ch.codePointAt(0).toString(16).padStart(2, '0');
    } else out += ch;
  }
  return out + quote;
}

/** "%g"-like rendering of seconds: 0.5 -> "0.5", 10 -> "10". */
export function g(seconds) {
  return String(Number(Number(seconds).toPrecision(6)));
}
