import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  repairCandidates,
  repairToolArguments,
  serializeToolResult,
  toolFailureContent,
  toolStepErrorContent,
  unknownToolContent,
} from '../../src/context';
import { buildToolPromptSpecs } from '../../src/context/tool-prompt-specs';
import { venvPython } from '../../support/repository';
import { referenceDriver } from '../support/reference';

describe('tool argument repair (spec 7.6)', () => {
  it.each([
    ['', '{}'],
    ['   ', '{}'],
    ['{"a": 1}', '{"a": 1}'],
    ['{{"a": 1}}', '{"a": 1}'],
    ['{{"a": 1}', '{"a": 1}'],
    ['{"a": 1}}', '{"a": 1}'],
    ['{"a": "x', '{"a": "x"}'],
    ['{"a": [1, 2', '{"a": [1, 2]}'],
    ['{"a": "br\\"ace', '{"a": "br\\"ace"}'],
    [' {"a": 1} ', '{"a": 1}'],
  ])('repairs %j to %j', (raw, repaired) => {
    expect(repairToolArguments(raw)).toMatchObject({ ok: true, text: repaired });
  });

  it('reports the trimmed raw text when no candidate is a JSON object', () => {
    expect(repairToolArguments(' [1, 2] ')).toEqual({ ok: false, text: '[1, 2]' });
    expect(repairToolArguments('not json')).toEqual({ ok: false, text: 'not json' });
  });

  it('lists candidates without duplicates, closing brackets before braces', () => {
    expect(repairCandidates('{"a": [{"b": 1')).toEqual(['{"a": [{"b": 1', '{"a": [{"b": 1]}}', '{"a": [{"b": 1]}']);
  });

  it('agrees with the reference repair on 500 seeded broken argument strings', () => {
    const fragment = fc.constantFrom(
      '{',
      '}',
      '[',
      ']',
      '"',
      '\\',
      ':',
      ',',
      ' ',
      'a',
      '1',
      '{{',
      '}}',
      '"k"',
      '\u00a0',
      '\x1c',
      'null',
      'NaN',
      '-',
    );
    const broken = fc.oneof(
      fc.array(fragment, { maxLength: 12 }).map((parts) => parts.join('')),
      fc
        .jsonValue()
        .map((value) => JSON.stringify({ k: value }))
        .chain((text) => fc.nat(text.length).map((cut) => text.slice(0, cut))),
    );
    const cases = fc.sample(broken, { seed: 77, numRuns: 500 });
    const result = spawnSync(venvPython, [referenceDriver], {
      input: cases.map((text) => JSON.stringify({ repair_arguments: text })).join('\n') + '\n',
      encoding: 'utf8',
    });
    expect(result.status, result.stderr).toBe(0);
    const reference = result.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { repaired: string }).repaired);
    const disagreements = cases.flatMap((text, index) => {
      const ours = repairToolArguments(text).text;
      return ours === reference[index] ? [] : [{ text, ours, reference: reference[index] }];
    });
    // Python's json.loads also accepts NaN and Infinity; JSON.parse does not. That is the only difference allowed.
    expect(disagreements.filter((d) => !/NaN|Infinity/.test(d.text))).toEqual([]);
  });
});

describe('tool result serialization (spec 7.6)', () => {
  it('quotes strings, indents JSON values, stringifies the rest', () => {
    expect(serializeToolResult('found')).toBe('"found"');
    expect(serializeToolResult('ünï\n')).toBe('"ünï\\n"');
    expect(serializeToolResult({ temp: 21 })).toBe('{\n  "temp": 21\n}');
    expect(serializeToolResult(5)).toBe('5');
    expect(serializeToolResult(null)).toBe('null');
    expect(serializeToolResult(undefined)).toBe('"undefined"');
    expect(serializeToolResult(10n)).toBe('"10"');
  });

  it('writes the error objects with the spec texts', () => {
    expect(unknownToolContent('nope')).toBe('{\n  "error": "Tool \'nope\' was not found"\n}');
    expect(toolFailureContent('add', '{"a": 1}', 'boom')).toBe(
      '{\n  "error": "Tool \'add\' failed during execution or result parsing with arguments {\\"a\\": 1}: boom"\n}',
    );
    expect(toolStepErrorContent('timed out')).toBe('{"error": "timed out"}');
  });
});

describe('tool prompt specs from tools (spec 4.5)', () => {
  it('trims, merges same-name tools, unions lists in first-appearance order and sorts by code point', () => {
    expect(
      buildToolPromptSpecs([
        { name: ' zeta ', description: '', best_practices: ['b', ' b ', ''] },
        { name: 'zeta', description: ' Z tool ', best_practices: ['c', 'b'], prompt_injection: ' <note/> ' },
        { name: '\u{1F600}', description: 'emoji' },
        { name: '\uFF21', description: 'fullwidth A' },
        { name: '  ' },
      ]),
    ).toEqual([
      { name: 'zeta', description: 'Z tool', best_practices: ['b', 'c'], prompt_injections: ['<note/>'] },
      { name: '\uFF21', description: 'fullwidth A', best_practices: [], prompt_injections: [] },
      { name: '\u{1F600}', description: 'emoji', best_practices: [], prompt_injections: [] },
    ]);
  });
});
