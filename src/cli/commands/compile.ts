import { readFile } from 'node:fs/promises';
import { compileInvocationTurn, CompileRequest, type CompiledTurn } from '../../context';
import { UsageError } from '../errors';

/** `patchloop compile FILE|-`: what exactly the model will see next for a saved state. */
export async function compileCommand(path: string | undefined): Promise<CompiledTurn> {
  if (path === undefined) throw new UsageError('usage: patchloop compile FILE (or - for standard input)');
  const text = path === '-' ? await readStandardInput() : await readFile(path, 'utf8');
  return compileText(text);
}

function compileText(text: string): CompiledTurn {
  const request = CompileRequest.parse(JSON.parse(text));
  const compiled = compileInvocationTurn(
    request.prompt_contract,
    request.transcript,
    request.mutations,
    request.selfref_snapshot,
  );
  return {
    reduced_transcript: compiled.reduced_transcript,
    transcript: compiled.transcript,
    system_prompt: compiled.system_prompt,
    llm_messages: compiled.llm_messages,
    selfref_snapshot: compiled.selfref_snapshot,
  };
}

async function readStandardInput(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
