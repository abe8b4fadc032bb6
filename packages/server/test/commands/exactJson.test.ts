// The CLI's JSON with exact 64-bit integers: parsing keeps integers past 2^53, printing writes
// bigints as bare numbers, and malformed text is refused saying where.
import { expect } from 'chai';
import {
  JsonNumber,
  JsonSyntaxError,
  parseExactJson,
  stringifyExactJson,
} from '../../src/commands/exactJson.js';

describe('exact JSON (CLI)', () => {
  it('reads integers past 2^53 as bigints and everything else as JSON.parse does', () => {
    const text =
      '{"a": 9007199254740993, "b": -9223372036854775808, "c": 18446744073709551615, "d": 12,' +
      ' "e": 1.5, "f": 1e3, "g": "x\\"y\\u00e9", "h": [true, false, null, {}], "i": []}';
    expect(parseExactJson(text)).to.deep.equal({
      a: 9007199254740993n,
      b: -9223372036854775808n,
      c: 18446744073709551615n,
      d: 12,
      e: 1.5,
      f: 1000,
      g: 'x"yé',
      h: [true, false, null, {}],
      i: [],
    });
  });

  it('prints bigints as bare integers, dates as ISO strings and binaries as base64', () => {
    const value = {
      big: 9007199254740993n,
      at: new Date('2026-01-02T03:04:05.000Z'),
      raw: Buffer.from([1, 2, 3]),
      list: [1n, 'two', null],
      skipped: undefined,
    };
    expect(stringifyExactJson(value)).to.equal(
      '{"big":9007199254740993,"at":"2026-01-02T03:04:05.000Z","raw":{"$base64":"AQID"},"list":[1,"two",null]}',
    );
    expect(stringifyExactJson({ a: [1n] }, 2)).to.equal('{\n  "a": [\n    1\n  ]\n}');
    expect(parseExactJson(stringifyExactJson(value))).to.deep.include({ big: 9007199254740993n });
  });

  it('prints the values below lineDepth levels on one line each: a table, a row a line', () => {
    const table = { group: 'g', shards: [{ shard: 0, cursor: 9007199254740993n, owner: null }] };
    expect(stringifyExactJson(table, 2, 2)).to.equal(
      '{\n  "group": "g",\n  "shards": [\n    {"shard":0,"cursor":9007199254740993,"owner":null}\n  ]\n}',
    );
    expect(parseExactJson(stringifyExactJson(table, 2, 2))).to.deep.equal(table);
    expect(stringifyExactJson({ shards: [] }, 2, 2)).to.equal('{\n  "shards": []\n}');
  });

  it('keeps a "__proto__" key as an own key, and a literal\'s kind for a reader that asks', () => {
    const parsed = parseExactJson('{"__proto__": {"a": 1}, "b": 2}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).to.equal(Object.prototype);
    expect(Object.keys(parsed)).to.deep.equal(['__proto__', 'b']);
    expect(stringifyExactJson(parsed)).to.equal('{"__proto__":{"a":1},"b":2}');
    expect(
      parseExactJson('[2, 2.0, -0, 1e3]', (literal, integral) => [literal, integral]),
    ).to.deep.equal([
      ['2', true],
      ['2.0', false],
      ['-0', true],
      ['1e3', false],
    ]);
    expect(Object.is(parseExactJson('-0'), 0), 'the integer -0 is 0').to.equal(true);
    expect(stringifyExactJson([new JsonNumber('2.0'), 2])).to.equal('[2.0,2]');
  });

  it('refuses malformed JSON, naming the character', () => {
    const cases: [string, RegExp][] = [
      ['{"a": 1,}', /expected a string at character 9/],
      ['{"a" 1}', /expected ":" at character 6/],
      ['[1 2]', /expected "," at character 4/],
      ['{"a": tru}', /expected a JSON value at character 7/],
      ['"open', /closing quote/],
      ['1 2', /expected the end of the JSON text at character 3/],
      ['', /expected a JSON value at character 1, found the end/],
    ];
    for (const [text, message] of cases) {
      expect(() => parseExactJson(text), text).to.throw(JsonSyntaxError, message);
    }
  });
});
