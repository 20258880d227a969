import { z } from 'zod';
import { canonicalJson, repairToolArguments } from '../context';
import { sharedSchema } from '../context/shared-schema';

/**
 * Tool policy (docs/guardrails.md#tool-policy): declarative rules on an agent, read top to bottom, the
 * first that matches a call deciding it. Pure and deterministic: the workflow decides each call before
 * its batch runs, so a replay decides the same; `patchloop policy check` asks the same function.
 */

/** Conditions on one top-level argument: every operator given must hold. */
const ArgumentCondition = sharedSchema('runtime/tool-policy#ArgumentCondition', () =>
  z
    .strictObject({
      eq: z.unknown().optional(),
      ne: z.unknown().optional(),
      gt: z.number().optional(),
      gte: z.number().optional(),
      lt: z.number().optional(),
      lte: z.number().optional(),
      in: z.array(z.unknown()).optional(),
      matches: z
        .string()
        .max(1000)
        .refine((pattern) => compiles(pattern), 'not a valid regular expression')
        .optional(),
    })
    .refine(
      (condition) => Object.keys(condition).length > 0,
      'name at least one of eq, ne, gt, gte, lt, lte, in, matches',
    ),
);
type ArgumentCondition = z.infer<typeof ArgumentCondition>;

const POLICY_DECISIONS = ['allow', 'deny', 'approve'] as const;
type PolicyDecision = (typeof POLICY_DECISIONS)[number];

/** One rule: which calls (tool name or glob, argument conditions, principals) and what they get. */
export const PolicyRule = sharedSchema('runtime/tool-policy#PolicyRule', () =>
  z.strictObject({
    /** A tool's name as the model sees it, or a glob (`*` any run of characters, `?` one). */
    tool: z.string().min(1),
    /** Conditions on top-level arguments, all of which must hold. */
    args: z.record(z.string(), ArgumentCondition).optional(),
    /** Who started the run (docs/gateway.md): a name or glob, or a list of them. Absent: anyone. */
    principal: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
    decision: z.enum(POLICY_DECISIONS),
    reason: z.string().max(1000).optional(),
  }),
);
export type PolicyRule = z.infer<typeof PolicyRule>;

/** The most rules an agent holds: each call is checked against them in workflow code. */
const MAX_POLICY_RULES = 200;

export const ToolPolicy = sharedSchema('runtime/tool-policy#ToolPolicy', () =>
  z.array(PolicyRule).max(MAX_POLICY_RULES),
);
export type ToolPolicy = z.infer<typeof ToolPolicy>;

/** What decided a call: a rule by its position, the agent's `needs_approval`, or nothing (allowed). */
export type PolicySource = { rule: number } | { needs_approval: true } | { default: true };

export interface PolicyVerdict {
  decision: PolicyDecision;
  reason?: string;
  source: PolicySource;
}

/** A call as the policy sees it: its tool, its arguments as the model wrote them, who the run is for. */
export interface PolicyCall {
  tool: string;
  /** The arguments' JSON text (repaired as a batch repairs it); text that is no JSON object matches no rule with `args`. */
  arguments: string;
  principal?: string | undefined;
}

/**
 * The decision for one call: the first rule that matches it, else `approve` when the agent's
 * `needs_approval` lists the tool (existing agent files keep working), else `allow`.
 */
export function decideCall(
  agent: { policy?: ToolPolicy | undefined; needs_approval: readonly string[] },
  call: PolicyCall,
): PolicyVerdict {
  // Read as the tool will get them: repaired as the batch repairs them.
  const repaired = repairToolArguments(call.arguments);
  const parsed = repaired.ok ? repaired.value : undefined;
  const index = (agent.policy ?? []).findIndex((rule) => ruleMatches(rule, call, parsed));
  if (index >= 0) {
    const rule = agent.policy![index]!;
    return {
      decision: rule.decision,
      ...(rule.reason !== undefined ? { reason: rule.reason } : {}),
      source: { rule: index },
    };
  }
  if (agent.needs_approval.includes(call.tool)) return { decision: 'approve', source: { needs_approval: true } };
  return { decision: 'allow', source: { default: true } };
}

/** The rule's words for people: "rule 2 (deny transfer for principal bob)". */
export function describeSource(agent: { policy?: ToolPolicy | undefined }, source: PolicySource): string {
  if ('needs_approval' in source) return 'needs_approval';
  if ('default' in source) return 'no rule matched (allowed)';
  const rule = agent.policy?.[source.rule];
  return `rule ${source.rule + 1}${rule ? ` ${JSON.stringify(rule)}` : ''}`;
}

function ruleMatches(rule: PolicyRule, call: PolicyCall, parsed: Record<string, unknown> | undefined): boolean {
  if (!globMatches(rule.tool, call.tool)) return false;
  if (rule.principal !== undefined) {
    const names = typeof rule.principal === 'string' ? [rule.principal] : rule.principal;
    if (call.principal === undefined || !names.some((name) => globMatches(name, call.principal!))) return false;
  }
  if (rule.args === undefined) return true;
  if (parsed === undefined) return false;
  return Object.entries(rule.args).every(([name, condition]) => conditionHolds(condition, parsed[name]));
}

function conditionHolds(condition: ArgumentCondition, value: unknown): boolean {
  const number = typeof value === 'number' ? value : undefined;
  if ('eq' in condition && !sameJson(value, condition.eq)) return false;
  if ('ne' in condition && sameJson(value, condition.ne)) return false;
  if (condition.gt !== undefined && !(number !== undefined && number > condition.gt)) return false;
  if (condition.gte !== undefined && !(number !== undefined && number >= condition.gte)) return false;
  if (condition.lt !== undefined && !(number !== undefined && number < condition.lt)) return false;
  if (condition.lte !== undefined && !(number !== undefined && number <= condition.lte)) return false;
  if (condition.in !== undefined && !condition.in.some((entry) => sameJson(value, entry))) return false;
  if (condition.matches !== undefined && !(typeof value === 'string' && new RegExp(condition.matches).test(value)))
    return false;
  return true;
}

/** Two JSON values alike (object keys in any order). */
function sameJson(left: unknown, right: unknown): boolean {
  return canonicalJson(left) === canonicalJson(right);
}

/** `*` any run of characters, `?` one; everything else as itself. */
export function globMatches(pattern: string, name: string): boolean {
  if (!/[*?]/.test(pattern)) return pattern === name;
  const source = pattern.replace(/[.+^${}()|[\]\\*?]/g, (character) =>
    character === '*' ? '.*' : character === '?' ? '.' : `\\${character}`,
  );
  return new RegExp(`^${source}$`, 's').test(name);
}

function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}
