import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { responsesBody } from '../../src/activities/responses-request';
import type { ChatRequestBody } from '../../src/fake-model/server';
import { modelScript, modelScriptsFrom, type ScriptStep } from '../../src/fake-model/script';
import { ScriptedModel, ScriptPlayer } from '../../src/fake-model/scripted-model';
import type { FakeStep } from '../../src/fake-model/steps';
import type { LlmRequest } from '../../src/runtime';

const weatherTool = {
  type: 'function',
  function: { name: 'weather', description: 'forecast', parameters: { type: 'object' } },
};
const steps: ScriptStep[] = [
  {
    name: 'asks the tool',
    expect: { user: { contains: 'Paris' }, tools: ['weather'] },
    callTools: [{ name: 'weather', arguments: { city: 'Paris' } }],
  },
  {
    name: 'answers',
    expect: { toolResults: [{ name: 'weather', content: /sunny/ }] },
    answer: 'Sunny in Paris.',
  },
];
const script = modelScript(steps, { name: 'weather' });

/** The requests of one conversation, as a worker sends them: the question, then the call and its result. */
function first(question = 'Weather in Paris?'): ChatRequestBody {
  return {
    model: 'm',
    messages: [
      { role: 'system', content: 'You forecast.' },
      { role: 'user', content: question },
    ],
    tools: [weatherTool],
  };
}
function second(result: string, question = 'Weather in Paris?', callId = 'call_1_1'): ChatRequestBody {
  return {
    ...first(question),
    messages: [
      ...first(question).messages,
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: callId, type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: callId, content: result },
    ],
  };
}

function refusal(step: FakeStep): string {
  expect(step).toMatchObject({ kind: 'error', status: 400, code: 'script_mismatch' });
  return (step as { message: string }).message;
}

describe('model scripts', () => {
  it('are checked where they are written: a wrong step says which and why', () => {
    expect(() => modelScript([{ name: 'x' }])).toThrow("script 'script' step 1: a step needs answer or callTools");
    expect(() => modelScript([{ answer: 'a', expects: {} } as ScriptStep])).toThrow(
      "script 'script' step 1: unknown 'expects' (known: name, expect, callTools, answer)",
    );
    expect(() => modelScript([{ answer: 'a' }, { callTools: [] }], { name: 'w' })).toThrow(
      "script 'w' step 2: callTools must be a non-empty array of {name, arguments}",
    );
    expect(() => modelScript([{ answer: 'a', expect: { user: { matches: '(' } } }])).toThrow(
      /script 'script' step 1 expect.user: Invalid regular expression/,
    );
    expect(() => modelScript([{ answer: 'a', expect: { toolResults: [{ content: 3 }] } } as never])).toThrow(
      'script \'script\' step 1 expect.toolResults[0].content: expected a string, {"contains": "..."} or {"matches": "regular expression"}',
    );
    expect(() => modelScript([])).toThrow("script 'script': steps must be a non-empty array");
  });

  it('come from JSON as a list of steps, a script object, or a list of scripts', () => {
    const json = JSON.parse(JSON.stringify(steps.map((step, index) => (index === 1 ? { answer: 'Sunny.' } : step))));
    expect(modelScriptsFrom(json, 'a.json').map((each) => each.name)).toEqual(['a.json']);
    expect(modelScriptsFrom({ name: 'one', steps: json }, 'b.json').map((each) => each.name)).toEqual(['one']);
    const many = modelScriptsFrom(
      {
        scripts: [
          { name: 'x', steps: json },
          { name: 'y', when: { system: { contains: 'clerk' } }, steps: json },
        ],
      },
      'c.json',
    );
    expect(many.map((each) => [each.name, each.when])).toEqual([
      ['x', undefined],
      ['y', { system: { contains: 'clerk' } }],
    ]);
    expect(() => modelScriptsFrom('steps', 'd.json')).toThrow(
      'd.json: a model script is an array of steps, an object {name, when, steps}, or a list of those',
    );
    expect(() => modelScriptsFrom([{ answer: 'ok', expect: { user: { contain: 'x' } } }], 'e.json')).toThrow(
      `script 'e.json' step 1 expect.user: expected a string, {"contains": "..."} or {"matches": "regular expression"}`,
    );
  });
});

describe('ScriptPlayer', () => {
  it('answers each request with the step its number of model replies points at, whatever the order', () => {
    const player = new ScriptPlayer([script]);
    // Two conversations interleaved, and a retried request: each gets its own step, the same each time.
    expect(player.respond(first())).toEqual({
      kind: 'reply',
      toolCalls: [{ id: 'call_1_1', name: 'weather', arguments: '{"city":"Paris"}' }],
    });
    expect(player.respond(first('Paris, today?'))).toMatchObject({ toolCalls: [{ name: 'weather' }] });
    expect(player.respond(second('sunny, 24 °C'))).toEqual({ kind: 'reply', content: ['Sunny ', 'in ', 'Paris.'] });
    expect(player.respond(second('sunny, 24 °C'))).toEqual({ kind: 'reply', content: ['Sunny ', 'in ', 'Paris.'] });
    expect(player.respond(second('sunny too', 'Paris, today?'))).toMatchObject({ kind: 'reply' });
    expect(player.unfinished()).toEqual([]);
  });

  it('refuses a request that does not fit its step, naming the step, what it expected and what came', () => {
    const heard: string[] = [];
    const player = new ScriptPlayer([script], (message) => heard.push(message));
    expect(refusal(player.respond(first('Weather in Oslo?')))).toBe(
      'scripted model: script \'weather\' step 1 (\'asks the tool\'), reply 1 of the conversation "Weather in Oslo?": expected the latest user message containing "Paris", got "Weather in Oslo?"',
    );
    expect(refusal(player.respond(second('rain')))).toBe(
      'scripted model: script \'weather\' step 2 (\'answers\'), reply 2 of the conversation "Weather in Paris?": expected the tool results [weather: matching /sunny/], got [weather: "rain"]',
    );
    const noTools = { ...first(), tools: [] };
    expect(refusal(player.respond(noTools))).toContain(
      'expected the tools weather to be offered, got []; calls weather, which the request does not offer (offered: [])',
    );
    // Past the last step: the conversation should have ended.
    const third = second('sunny');
    third.messages.push({ role: 'assistant', content: 'Sunny in Paris.' }, { role: 'user', content: 'And tomorrow?' });
    expect(refusal(player.respond(third))).toBe(
      'scripted model: script \'weather\': the conversation "Weather in Paris?" asks for reply 3, but the script has 2 step(s) (the last one should have ended it)',
    );
    expect(heard).toEqual(player.problems);
    expect(heard).toHaveLength(4);
  });

  it("runs a step's own check on the request: false, a message or a throw refuses it", () => {
    const checked = (check: NonNullable<ScriptStep['expect']>['check']) =>
      new ScriptPlayer([modelScript([{ answer: 'ok', expect: { check } }], { name: 'c' })]).respond(first());
    expect(checked((request) => request.system === 'You forecast.')).toMatchObject({ kind: 'reply' });
    expect(
      refusal(
        checked(function hasNoTools(request) {
          return request.tools.length === 0;
        }),
      ),
    ).toContain(': its check hasNoTools failed');
    expect(refusal(checked(() => 'the system prompt is too short'))).toContain(': the system prompt is too short');
    expect(
      refusal(
        checked((request) => {
          expect(request.lastUserMessage).toBe('something else');
        }),
      ),
    ).toContain(': its check threw: expected');
  });

  it('reports, once asked, steps no conversation reached and scripts that played nothing', () => {
    const clerk = modelScript([{ answer: 'filed' }], { name: 'clerk', when: { system: { contains: 'clerk' } } });
    const player = new ScriptPlayer([clerk, script]);
    expect(player.unfinished()).toEqual(['no request arrived']);
    player.respond(first());
    expect(player.unfinished()).toEqual([
      "script 'weather': the conversation \"Weather in Paris?\" never asked for step 2 ('answers') (1 of 2 step(s) unused)",
      "script 'clerk' played no conversation",
    ]);
    const clerkRequest = {
      model: 'm',
      messages: [
        { role: 'system', content: 'You are a clerk.' },
        { role: 'user', content: 'file it' },
      ],
    };
    expect(player.respond(clerkRequest)).toMatchObject({ kind: 'reply', content: ['filed'] });
    player.respond(second('sunny'));
    expect(player.unfinished()).toEqual([]);
    player.reset();
    expect(player.unfinished()).toEqual(['no request arrived']);
    const only = new ScriptPlayer([clerk]);
    expect(refusal(only.respond(first()))).toBe(
      'scripted model: no script plays the conversation "Weather in Paris?" (scripts: \'clerk\' when the system prompt is containing "clerk")',
    );
  });

  it('reads the Responses API wire the same way', () => {
    const player = new ScriptPlayer([script]);
    const asResponses = (body: ChatRequestBody) => responsesBody(body as unknown as LlmRequest) as ChatRequestBody;
    expect(player.respond(asResponses(first()))).toMatchObject({ toolCalls: [{ name: 'weather' }] });
    expect(refusal(player.respond(asResponses(second('rain'))))).toContain('got [weather: "rain"]');
    expect(player.respond(asResponses(second('sunny')))).toMatchObject({ content: ['Sunny ', 'in ', 'Paris.'] });
  });
});

describe('ScriptedModel over HTTP', () => {
  let model: ScriptedModel | undefined;
  afterEach(async () => {
    await model?.close();
    model = undefined;
  });

  it('serves the openai client, streamed or not, and a request that does not fit fails the call and assertDone', async () => {
    model = await ScriptedModel.start(script);
    const client = new OpenAI({ baseURL: model.url, apiKey: 'offline', maxRetries: 0 });
    const messages = first().messages as unknown as OpenAI.ChatCompletionMessageParam[];
    const tools = [weatherTool] as OpenAI.ChatCompletionTool[];
    const stream = await client.chat.completions.create({ model: 'm', messages, tools, stream: true });
    let argumentsText = '';
    for await (const chunk of stream)
      argumentsText += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
    expect(argumentsText).toBe('{"city":"Paris"}');
    expect(() => model!.assertDone()).toThrow(
      "script 'weather': the conversation \"Weather in Paris?\" never asked for step 2 ('answers')",
    );
    const wrong = client.chat.completions.create({
      model: 'm',
      messages: second('rain').messages as unknown as OpenAI.ChatCompletionMessageParam[],
      tools,
    });
    await expect(wrong).rejects.toMatchObject({ status: 400, code: 'script_mismatch' });
    await expect(wrong).rejects.toThrow('got [weather: "rain"]');
    const answer = await client.chat.completions.create({
      model: 'm',
      messages: second('sunny').messages as unknown as OpenAI.ChatCompletionMessageParam[],
      tools,
    });
    expect(answer.choices[0]!.message.content).toBe('Sunny in Paris.');
    expect(model.requests).toHaveLength(3);
    // The refused request stays a problem until reset.
    expect(() => model!.assertDone()).toThrow(/^scripted model: script 'weather' step 2 \('answers'\)/);
    model.reset();
    expect(() => model!.assertDone()).toThrow('no request arrived');
  });

  it('plays the scripts each test uses: assertDone answers for those only, whatever else the model played', async () => {
    const clerk = modelScript([{ answer: 'Filed.' }], { name: 'clerk', when: { user: 'File the report.' } });
    model = await ScriptedModel.start();
    const client = new OpenAI({ baseURL: model.url, apiKey: 'offline', maxRetries: 0 });
    const tools = [weatherTool] as OpenAI.ChatCompletionTool[];
    const ask = (body: ChatRequestBody) =>
      client.chat.completions.create({
        model: 'm',
        messages: body.messages as unknown as OpenAI.ChatCompletionMessageParam[],
        tools,
      });
    const fileIt: ChatRequestBody = { model: 'm', messages: [{ role: 'user', content: 'File the report.' }] };
    // No test has said what it plays yet.
    await expect(ask(first())).rejects.toThrow(
      'scripted model: no script plays the conversation "Weather in Paris?" (scripts: none: give the model the test\'s scripts with model.use(...))',
    );
    // A test of the forecaster: its script, played to the end.
    model.use(script);
    expect(model.problems).toEqual([]);
    await ask(first());
    expect((await ask(second('sunny'))).choices[0]!.message.content).toBe('Sunny in Paris.');
    expect(() => model!.assertDone()).not.toThrow();
    // A test of the clerk: the forecaster's script is no longer its business.
    model.use(clerk);
    expect((await ask(fileIt)).choices[0]!.message.content).toBe('Filed.');
    expect(() => model!.assertDone()).not.toThrow();
    // A test that means to play both, and plays one: that one script is the problem.
    model.use([clerk], script);
    await ask(fileIt);
    expect(() => model!.assertDone()).toThrow(/^script 'weather' played no conversation$/);
  });
});
