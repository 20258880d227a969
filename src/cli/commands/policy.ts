import { FailureType } from '../../common';
import { AgentDefinition, decideCall, describeSource } from '../../runtime';
import { agentsFromFile } from '../agents-file';
import { parseCommand } from '../arguments';
import { CliError, UsageError } from '../errors';
import { POLICY_SYNTAX } from '../syntax';

/**
 * `patchloop policy check AGENT TOOL ARGS [--principal P] [--agents FILE] [--json]`: the decision a run
 * of the agent would make for that call (the same pure function the workflow calls), and the rule that
 * made it. No Temporal server.
 */
export async function policyCommand(args: string[], print: (line: string) => void): Promise<undefined> {
  const { values, positionals } = parseCommand(args, POLICY_SYNTAX);
  if (positionals['action'] !== 'check')
    throw new UsageError(`unknown policy action '${positionals['action']}'\nusage: ${POLICY_SYNTAX.usage}`);
  const agents = (await agentsFromFile(values.agents)).map((input) => AgentDefinition.parse(input));
  const agent = agents.find((entry) => entry.name === positionals['agent']);
  if (!agent)
    throw new CliError(
      `unknown agent '${positionals['agent']}' (agents: ${agents.map((entry) => entry.name).join(', ')})`,
      FailureType.UnknownAgent,
    );
  const argumentText = positionals['arguments'] ?? '{}';
  try {
    const parsed: unknown = JSON.parse(argumentText);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
  } catch {
    throw new UsageError(`ARGS must be a JSON object, not '${argumentText}'\nusage: ${POLICY_SYNTAX.usage}`);
  }
  const tool = positionals['tool']!;
  const verdict = decideCall(agent, { tool, arguments: argumentText, principal: values.principal });
  const rule = describeSource(agent, verdict.source);
  if (values.json) print(JSON.stringify({ ...verdict, rule }));
  else print(`${verdict.decision}: ${rule}${verdict.reason !== undefined ? `: ${verdict.reason}` : ''}`);
  return undefined;
}
