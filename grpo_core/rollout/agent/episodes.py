"""The multi-turn rollout loop: G trajectories per prompt advance together, turn by turn, until each episode ends.

Turn 1 is the engine's ordinary ``generate`` (G completions per prompt, the prompt's prefill shared). Then, for
every trajectory still running: its last turn is parsed for tool calls (grpo_core.rollout.agent.toolcalls), the calls of
all trajectories run in one sandbox batch (grpo_core.rollout.agent.sandboxed), or the environment's ``respond`` is asked
for the next message; the template's tokens for those messages are appended (grpo_core.data.chat), and the
engine samples the next turn of all running trajectories in one batched call (``continue_turns``). Finished
trajectories drop out. An episode ends when the model answers without calling a tool (or ``respond`` returns
None), or at a limit — ``max_turns``, ``max_total_tokens``, or a turn that hit ``max_completion_tokens`` — which
makes it *truncated*.

Credit assignment (the reason for this module's shape): a trajectory becomes one ``Rollout`` row whose
"completion" is everything after the prompt, with ``completion_mask`` 1 exactly on the tokens the model sampled
(each turn's tokens, its end-of-turn token included) and 0 on tool results, environment messages and the
template's tokens between turns. The update (grpo_core.update.step) attends to every token and takes loss on the
masked ones only, so the log-probs are those of the sampled tokens in their full context. The reward is the
episode's (its advantage covers every model token of the trajectory).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from grpo_core.data.chat import ChatError, content_text
from grpo_core.data.rows import chat_format
from grpo_core.errors import UserError
from grpo_core.hardware.device import HOST
from grpo_core.rollout.agent.sandboxed import EnvironmentRunner
from grpo_core.rollout.agent.toolcalls import parse_turn, schemas_from_signatures
from grpo_core.rollout.batch import Rollout, left_padded, right_padded
from grpo_core.rollout.engines.base import RolloutEngine, Sampling
from grpo_core.schemas.environment import EnvironmentSpec

LIMIT_ENDINGS = ("max_turns", "max_total_tokens", "length")


@dataclass
class Episode:
    """One trajectory: the prompt's ids, then every token after it with its loss mask and sampling log-prob."""

    row: int  # step-wide trajectory number: keys its sampling noise
    item: dict[str, Any]
    prompt: list[int]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    tokens: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)  # 1: sampled by the model (carries loss)
    logps: list[float] = field(default_factory=list)
    spans: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, "model"|"tool"|"user")
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0  # calls that raised, timed out or returned no usable value
    call_errors: int = 0  # malformed calls (not JSON, unknown tool, arguments against the schema)
    tool_seconds: list[float] = field(default_factory=list)
    output_tools: list[dict[str, Any]] = field(default_factory=list)
    ended: str = ""  # "done", or one of LIMIT_ENDINGS
    pending: list[dict[str, Any]] = field(default_factory=list)  # the last turn's calls (or {"error"}) to answer

    @property
    def truncated(self) -> bool:
        return self.ended in LIMIT_ENDINGS

    @property
    def output_text(self) -> str:
        """The last assistant message's text (tool calls removed): OpenAI's ``sample.output_text``."""
        return next((m["content"] for m in reversed(self.messages) if m["role"] == "assistant"), "")

    def add(self, ids: list[int], kind: str, logps: list[float] | None = None) -> None:
        start = len(self.tokens)
        self.tokens += ids
        trained = kind == "model"
        self.mask += [int(trained)] * len(ids)
        self.logps += logps if (trained and logps is not None) else [0.0] * len(ids)
        if ids:
            self.spans.append((start, len(self.tokens), kind))

    def grader_view(self) -> dict[str, Any]:
        """What a grader's ``sample`` gets beside ``output_text``: the whole conversation and every tool call."""
        return {"messages": copy.deepcopy(self.messages), "output_tools": copy.deepcopy(self.output_tools)}


def turn_seed(seed: int, turn: int) -> int:
    """The noise seed of turn ``turn`` (0 = the first): each turn of a trajectory draws a fresh stream."""
    return seed if turn == 0 else (seed + 0x9E3779B1 * turn) & 0x7FFFFFFF


class AgentRollouts:
    """Samples multi-turn episodes with a rollout engine and the job's environment (see the module doc)."""

    def __init__(
        self,
        engine: RolloutEngine | None,
        tokenizer: Any,
        spec: EnvironmentSpec,
        runner: EnvironmentRunner,
        stop_ids: list[int],
        chat_template_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.engine, self.tokenizer, self.spec, self.runner = engine, tokenizer, spec, runner
        self.stop_ids = stop_ids
        self.stop_texts = [tokenizer.decode([i]) for i in stop_ids]
        kw_json = json.dumps(chat_template_kwargs or {}, sort_keys=True)
        self.chat = chat_format(tokenizer, kw_json, spec.tool_call_format)
        self.form, described = runner.load()
        self.env_tools = schemas_from_signatures(described) if self.form == "tools" else []

    def tools_for(self, row: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The tools the model is shown for ``row``: the row's ``tools``, else the environment's functions."""
        if self.form != "tools":
            return row.get("tools") or None
        return row.get("tools") or self.env_tools or None

    def prompt(self, row: dict[str, Any]) -> str:
        """The first prompt of an episode on ``row`` (its messages or prompt, with its tools); a plain prompt for a
        model without a chat template is sent as it is, as for single-turn jobs (grpo_core.data.rows.prompt_text)."""
        tools = self.tools_for(row)
        if not self.chat.has_template and "prompt" in row and not tools:
            return str(row["prompt"])
        return self.chat.prompt(_messages(row), tools)

    def run(self, prompts: list[str], items: list[dict[str, Any]], sampling: Sampling) -> Rollout:
        """``group_size`` episodes per prompt (``items[i]`` is prompt i's dataset row), rows grouped by prompt."""
        if self.engine is None:
            raise RuntimeError("AgentRollouts.run before its engine was set")
        engine = self.engine
        ro = engine.generate(prompts, sampling)
        g = sampling.group_size
        episodes = []
        for i in range(ro.completion_ids.shape[0]):
            item = items[i // g]
            n = int(ro.completion_mask[i].sum())
            ep = Episode(
                row=sampling.first_row + i,
                item=item,
                prompt=ro.prompt_ids[i][ro.prompt_mask[i].bool()].tolist(),
                messages=_messages(item),
                tools=self.tools_for(item),
            )
            logps = ro.sampling_logp[i, :n].tolist() if ro.sampling_logp is not None else None
            self._add_turn(ep, ro.completion_ids[i, :n].tolist(), logps)
            episodes.append(ep)
        running = [ep for ep in episodes if not ep.ended]
        turn = 1
        while running:
            running = self._advance(running)
            if not running:
                break
            budget = max(self.spec.max_total_tokens - len(ep.tokens) for ep in running)
            seed = turn_seed(sampling.seed, turn)
            step = replace(sampling, max_new_tokens=min(sampling.max_new_tokens, budget), seed=seed)
            out = engine.continue_turns([ep.prompt + ep.tokens for ep in running], step, [ep.row for ep in running])
            for ep, (ids, logps) in zip(running, out, strict=True):
                self._add_turn(ep, ids, logps)
            running = [ep for ep in running if not ep.ended]
            turn += 1
        packed = pack_episodes(episodes, self.tokenizer, self.stop_ids, with_logps=ro.sampling_logp is not None)
        # an episode is as old as its first turn (later turns may come from newer weights beside the trainer)
        return replace(packed, versions=ro.versions)

    def _add_turn(self, ep: Episode, ids: list[int], logps: list[float] | None) -> None:
        """Append one sampled turn (cut at the episode's token budget), its assistant message and its tool calls;
        end the episode where the turn says so."""
        left = self.spec.max_total_tokens - len(ep.tokens)
        cut = len(ids) > left
        if cut:
            ids, logps = ids[:left], (logps[:left] if logps is not None else None)
        stopped = bool(ids) and ids[-1] in self.stop_ids and not cut
        ep.add(ids, "model", logps)
        ep.turns += 1
        text = self.tokenizer.decode(ids, skip_special_tokens=False)
        for stop in self.stop_texts:
            if stop and text.endswith(stop):
                text = text[: -len(stop)]
                break
        ep.pending = []
        if self.form == "tools" and ep.tools:
            parsed = parse_turn(text, self.chat.format, ep.tools, f"call_{ep.row}_{ep.turns}")
            ep.call_errors += len(parsed.errors)
            message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
            public = [{k: v for k, v in c.items() if k != "parsed_arguments"} for c in parsed.calls]
            if public:
                message["tool_calls"] = public
                ep.output_tools += public
            ep.messages.append(message)
            ep.pending = [*parsed.calls, *({"error": e} for e in parsed.errors)]
        else:
            ep.messages.append({"role": "assistant", "content": text.strip()})
        if not stopped:  # no end-of-turn: the episode's budget ran out, or the turn's
            ep.ended = "max_total_tokens" if len(ep.tokens) >= self.spec.max_total_tokens else "length"
        elif self.form == "tools" and not ep.pending:
            ep.ended = "done"
        elif ep.turns >= self.spec.max_turns:
            ep.ended = "max_turns"

    def _advance(self, running: list[Episode]) -> list[Episode]:
        """Run the environment on each running episode's last turn and append its messages' tokens; the episodes
        that continue (each waits for the model's next turn)."""
        pending = [(ep, ep.pending) for ep in running]
        new = self._run_tools(pending) if self.form == "tools" else self._respond([ep for ep, _ in pending])
        going = []
        for ep, messages in new:
            if not messages:
                ep.ended = ep.ended or "done"
                continue
            try:
                text = self.chat.between_turns(messages, ep.tools if self.chat.native_tools else None, self.stop_texts)
            except ChatError as exc:
                raise UserError(f"multi-turn rollouts with this model's chat template: {exc}") from None
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(ep.tokens) + len(ids) >= self.spec.max_total_tokens:
                ep.ended = "max_total_tokens"
                continue
            ep.messages += messages
            ep.add(ids, messages[-1]["role"] if messages[-1]["role"] in ("tool", "user") else "user")
            going.append(ep)
        return going

    def _run_tools(
        self, pending: list[tuple[Episode, list[dict[str, Any]]]]
    ) -> list[tuple[Episode, list[dict[str, Any]]]]:
        """Every well-formed call of every episode in one sandbox batch; each call and each malformed one gets a
        tool message (errors as ``Error: …``, so the model can read them)."""
        batch = [
            {"tool": c["function"]["name"], "arguments": c["parsed_arguments"], "item": ep.item}
            for ep, calls in pending
            for c in calls
            if "error" not in c
        ]
        results = iter(self.runner.call(batch))
        out = []
        for ep, calls in pending:
            messages = []
            for c in calls:
                if "error" in c:
                    messages.append({"role": "tool", "content": f"Error: {c['error']}"})
                    continue
                res = next(results)
                ep.tool_calls += 1
                ep.tool_seconds.append(res.seconds)
                if res.error is not None:
                    ep.tool_errors += 1
                    content = f"Error: {res.error}"
                else:
                    content = str(res.value)
                name = c["function"]["name"]
                messages.append({"role": "tool", "tool_call_id": c["id"], "name": name, "content": content})
            out.append((ep, messages))
        return out

    def _respond(self, eps: list[Episode]) -> list[tuple[Episode, list[dict[str, Any]]]]:
        """The environment's next message for each episode (None ends it; an error ends it too, counted)."""
        results = self.runner.call([{"respond": ep.messages, "item": ep.item} for ep in eps])
        out = []
        for ep, res in zip(eps, results, strict=True):
            ep.tool_calls += 1
            ep.tool_seconds.append(res.seconds)
            message = None
            if res.error is None and res.value is not None:
                try:
                    message = _check_message(res.value, self.spec.max_tool_output_chars)
                except ValueError as exc:
                    res.error = str(exc)
            if res.error is not None:
                ep.tool_errors += 1
            out.append((ep, [message] if message is not None else []))
        return out


def make_agent(
    spec: EnvironmentSpec,
    tokenizer: Any,
    stop_ids: list[int],
    chat_template_kwargs: dict[str, Any] | None = None,
    sandbox_tier: str = "auto",
) -> AgentRollouts:
    """The job's environment started in its sandbox (UserError when its source does not load), without an engine
    yet: set ``engine`` before sampling (the trainer checks the prompts, tools included, before it starts one)."""
    runner = EnvironmentRunner(
        spec.source, tier=sandbox_tier, call_timeout=spec.tool_timeout_seconds, max_chars=spec.max_tool_output_chars
    )
    try:
        return AgentRollouts(None, tokenizer, spec, runner, stop_ids, chat_template_kwargs)
    except BaseException:
        runner.close()
        raise


def _messages(row: dict[str, Any]) -> list[dict[str, Any]]:
    if "messages" in row:
        return copy.deepcopy(row["messages"])
    return [{"role": "user", "content": row["prompt"]}]


def _check_message(value: Any, max_chars: int) -> dict[str, Any]:
    """``respond``'s return value as a message, or ValueError saying what is wrong with it."""
    if not isinstance(value, dict):
        raise ValueError(f"respond() returned a {type(value).__name__}, not a message dict or None")
    role = value.get("role")
    if role not in ("user", "tool"):
        raise ValueError(f"respond() returned a message with role {role!r}: use 'user' or 'tool'")
    try:
        text = content_text(value.get("content"))
    except ChatError as exc:
        raise ValueError(f"respond() returned an unusable content: {exc}") from None
    if len(text) > max_chars:
        text = text[:max_chars] + f"... [{len(text) - max_chars} more characters cut]"
    return {"role": role, "content": text}


def pack_episodes(episodes: list[Episode], tokenizer: Any, stop_ids: list[int], *, with_logps: bool) -> Rollout:
    """The episodes as one Rollout: prompts left-padded, trajectories right-padded, the loss mask explicit."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stop_ids[0]
    prompt_ids, prompt_mask = left_padded([e.prompt for e in episodes], pad)
    ids = right_padded([e.tokens for e in episodes], pad)
    mask = right_padded([e.mask for e in episodes], 0)
    logp = right_padded([e.logps for e in episodes], 0.0, torch.float32) if with_logps else None
    truncated = torch.tensor([e.truncated for e in episodes], dtype=torch.bool, device=HOST)
    texts = [e.output_text for e in episodes]
    return Rollout(prompt_ids, prompt_mask, ids, mask, truncated, texts, logp, episodes=episodes)
