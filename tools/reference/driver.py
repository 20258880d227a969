"""Runs the reference context compiler (SimpleLLMFunc 0.8.4) on compile cases.

Reads one JSON case per line on stdin (the conformance-vector input format) and writes one JSON line
per case with the reference's output (or, for `{"repair_arguments": text}`, its tool-argument repair), plus the output of the reference with patchloop's deliberate
deviations (spec section 10) switched on one at a time and together, so the differential test can
name the rule behind every difference.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import sys
import tempfile

# The package's import sets up logging and writes a logs/ folder in the working directory.
os.chdir(tempfile.mkdtemp(prefix="patchloop-reference-"))
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    import logging

    from SimpleLLMFunc.base import compile_pipeline, context_compile
    from SimpleLLMFunc.base.tool_call.extraction import repair_tool_call_arguments
    from SimpleLLMFunc.base.types import mutation as mutation_types
    from SimpleLLMFunc.base.types.source import DataFromSelfRef
    from SimpleLLMFunc.llm_decorator.invocation_spec import PromptContract
    from SimpleLLMFunc.runtime.selfref.context_ops import parse_data_from_selfref
logging.disable(logging.CRITICAL)

ORIGINAL_CANCELLED = context_compile._append_tool_cancelled_mutation
ORIGINAL_REDUCE = compile_pipeline.reduce_turn_context


def cancelled_keeps_transcript_valid(messages, mutation):
    """Deviation 10.a: append the pair only for unknown ids, only the result for pending ones."""
    calls = sum(
        1
        for message in messages
        if message.get("role") == "assistant" and isinstance(message.get("tool_calls"), list)
        for call in message["tool_calls"]
        if isinstance(call, dict) and call.get("id") == mutation.tool_call_id
    )
    results = sum(1 for m in messages if m.get("role") == "tool" and m.get("tool_call_id") == mutation.tool_call_id)
    if calls == 0:
        ORIGINAL_CANCELLED(messages, mutation)
        return
    if results >= calls:
        return
    suffix = f" Reason: {mutation.abort_reason}" if mutation.abort_reason else ""
    messages.append(
        {
            "role": "tool",
            "tool_call_id": mutation.tool_call_id,
            "content": f"<Tool execution cancelled by user. Tool: {mutation.tool_name}.{suffix}>",
        }
    )


def reduce_with_experience_markers(transcript, pending_mutations, selfref_snapshot=None):
    """Deviation 10.b: experiences, and experience patches, count as SelfRef markers."""
    reduced = ORIGINAL_REDUCE(transcript, pending_mutations, selfref_snapshot)
    if selfref_snapshot is None:
        return reduced
    parsed = parse_data_from_selfref(reduced.transcript)
    experience_patch = any(
        isinstance(m, (mutation_types.ExperienceRememberMutation, mutation_types.ExperienceForgetMutation))
        for m in pending_mutations
    )
    if parsed.experiences or experience_patch:
        return dataclasses.replace(reduced, selfref_snapshot=parsed)
    return reduced


@contextlib.contextmanager
def deviations(names):
    context_compile._append_tool_cancelled_mutation = (
        cancelled_keeps_transcript_valid if "a" in names else ORIGINAL_CANCELLED
    )
    compile_pipeline.reduce_turn_context = reduce_with_experience_markers if "b" in names else ORIGINAL_REDUCE
    try:
        yield
    finally:
        context_compile._append_tool_cancelled_mutation = ORIGINAL_CANCELLED
        compile_pipeline.reduce_turn_context = ORIGINAL_REDUCE


def to_mutation(data):
    fields = dict(data)
    return getattr(mutation_types, fields.pop("type"))(**fields)


def snapshot_json(snapshot):
    return None if snapshot is None else dataclasses.asdict(snapshot)


def compile_case(case):
    contract_fields = case.get("prompt_contract") or {}
    contract = PromptContract(
        base_instruction=contract_fields.get("base_instruction", ""),
        system_prompt=contract_fields.get("system_prompt"),
        tool_prompt_specs=contract_fields.get("tool_prompt_specs", []),
        include_must_principles=contract_fields.get("include_must_principles", False),
    )
    snapshot_fields = case.get("selfref_snapshot")
    snapshot = None if snapshot_fields is None else DataFromSelfRef(**snapshot_fields)
    mutations = [to_mutation(m) for m in case.get("mutations", [])]
    try:
        reduced = compile_pipeline.reduce_turn_context(case.get("transcript", []), mutations, snapshot)
        compiled = compile_pipeline.convert_to_llm_request(reduced, contract)
    except ValueError as error:
        return {"error": str(error)}
    return {
        "ok": {
            "reduced_transcript": reduced.transcript,
            "transcript": compiled.transcript,
            "system_prompt": compiled.system_prompt,
            "llm_messages": compiled.llm_messages,
            "selfref_snapshot": snapshot_json(compiled.selfref_snapshot),
        }
    }


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        if "repair_arguments" in case:
            sys.stdout.write(json.dumps({"repaired": repair_tool_call_arguments(case["repair_arguments"])}, ensure_ascii=False) + "\n")
            continue
        outputs = {}
        for names in ("", "a", "b", "ab"):
            with deviations(names):
                outputs[names or "reference"] = compile_case(case)
        sys.stdout.write(json.dumps(outputs, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
