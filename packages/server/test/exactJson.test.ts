// The CLI's JSON with exact 64-bit integers: parsing keeps integers past 2^53, printing writes
// bigints as bare numbers, and malformed text is refused saying where.
import { expect } from 'chai';
import { JsonSyntaxError, parseExactJson, stringifyExactJson } from '../src/commands/exactJson.js';

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
