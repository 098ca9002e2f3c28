"""tau2-bench results (sierra-research/tau2-bench): the JSON ``tau2 run`` saves.

A results file is one object ``{timestamp, info, tasks, simulations}`` (the ``Results`` model of
``src/tau2/data_model/simulation.py``). ``info`` describes the run: the agent's and the user
simulator's implementation and model (``agent_info``, ``user_info``), and the domain with its
``policy`` (``environment_info``), the agent's instructions. ``tasks`` are the task definitions;
each of the ``simulations`` (a ``SimulationRun``: ``id``, ``task_id``, ``trial``,
``termination_reason``, ``reward_info``, ``agent_cost``, ``user_cost``, ``messages``) is one
conversation of one task and becomes one trajectory.

Messages are tagged by ``role``: ``assistant`` (the agent under test) and ``user`` (the simulated
customer) speak with ``content`` and may call tools, ``tool_calls`` ``{id, name, arguments,
requestor}``: in the dual-control domains (telecom) the user works its own device through tools;
``tool`` answers one call (``id`` is the call's, ``requestor``, ``error``), and a
``MultiToolMessage`` (``tool`` with ``tool_messages``) answers several. ``usage`` and ``cost``
are per message. The policy is the first step, as the agent received it. The task is what the
simulated user was told (``user_scenario.instructions``: its reason for calling, what it knows
and does not, how to behave), or the ``ticket`` a solo agent (``llm_agent_solo``) works from.
The reward is the score, 1 a pass; the reward's breakdown, the task's evaluation criteria, its
purpose and initial state, and any review of the run are hidden metadata: an annotator judges
the conversation without the key.

A file too big to parse whole is read one simulation at a time (``tau2`` writes ``info`` and
``tasks`` before them). Voice runs are saved as a folder (``results.json`` beside
``simulations/``) and hold audio ``ticks`` instead of messages; they are refused by name rather
than imported empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson

from annotator.errors import ImportFailure
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, as_text, finish, record_values, stable_id
from annotator.importers.detect import Head
from annotator.importers.media import base64_size, placeholder
from annotator.importers.reading import load_json, stream_members, streamed
from annotator.importers.steps import StepList, as_int, json_text, obj, parse_time, plain, seq, str_or_none
from annotator.importers.tau_bench import reward_outcome
from annotator.models import HIDDEN, Trajectory

SYSTEM = "tau2-bench"
#: Simulation fields an annotator must not see before judging (grading, reviews of the run).
_HIDDEN_RUN = ("reward_info", "review", "user_only_review", "hallucination_check", "auth_classification")
_HIDDEN_TASK = ("evaluation_criteria", "description", "initial_state")
_KEPT_RUN = ("id", "task_id", "trial", "seed", "mode", "termination_reason", "start_time", "end_time",
             "duration", "agent_cost", "user_cost", "agent_usage", "info")


def task_text(task: dict, solo: bool) -> str | None:
    """What the simulated user was told to do, or the ticket a solo agent works from, as text."""
    ticket = str_or_none(task.get("ticket"))
    if solo and ticket:
        return ticket
    scenario = obj(task.get("user_scenario"))
    instructions = scenario.get("instructions")
    lines = []
    if isinstance(instructions, dict):
        lines += [f"{key.replace('_', ' ').capitalize()}: {as_text(value).strip()}"
                  for key, value in instructions.items() if key != "domain" and value]
    elif instructions:
        lines.append(as_text(instructions).strip())
    if scenario.get("persona"):
        lines.append(f"Persona: {as_text(scenario['persona']).strip()}")
    return "\n".join(lines) or ticket


class _Conversation:
    def __init__(self) -> None:
        self.out = StepList()

    def message(self, i: int, msg: dict) -> None:
        role, sid, raw = str_or_none(msg.get("role")), f"messages[{i}]", plain(msg)
        when = parse_time(msg.get("timestamp"))
        attrs = {k: msg[k] for k in ("turn_idx", "cost") if msg.get(k) is not None}
        if role == "tool" and isinstance(msg.get("tool_messages"), list):
            for j, part in enumerate(msg["tool_messages"]):
                self.result(f"{sid}.tool_messages[{j}]", obj(part), raw)
        elif role == "tool":
            self.result(sid, msg, raw)
        elif role == "system":
            self.out.add(id=sid, kind="system", role=role, agent="system", content=as_text(msg.get("content")),
                         timestamp=when, raw=raw)
        elif role in ("assistant", "user"):
            self.turn(sid, role, msg, when, attrs, raw)
        else:
            self.out.unknown_event(str(role), raw, id=sid)

    def turn(self, sid: str, role: str, msg: dict, when, attrs: dict, raw: object) -> None:
        first = len(self.out.steps)
        text = as_text(msg.get("content"))
        if isinstance(msg.get("audio_content"), str):
            fmt = obj(msg.get("audio_format")).get("encoding")
            text = "\n".join(t for t in (text, placeholder("audio", str_or_none(fmt),
                                                           base64_size(msg["audio_content"]))) if t)
        calls = seq(msg.get("tool_calls"))
        if text or not calls:
            self.out.add(id=sid, kind="message", role=role, agent=role, content=text, timestamp=when, raw=raw)
        for j, call in enumerate(obj(c) for c in calls):
            name, args = str_or_none(call.get("name")), json_text(call.get("arguments"))
            self.out.add(id=f"{sid}.tool_calls[{j}]", kind="tool_call", role=role, agent=role, tool_name=name,
                         tool_args=args, call_id=call.get("id"), content=f"{name}({args or ''})", timestamp=when,
                         attributes={"requestor": call["requestor"]} if "requestor" in call else {}, raw=raw)
        usage = obj(msg.get("usage"))
        head = self.out.steps[first]
        head.tokens_in, head.tokens_out = as_int(usage.get("prompt_tokens")), as_int(usage.get("completion_tokens"))
        head.attributes.update(attrs)

    def result(self, sid: str, msg: dict, raw: object) -> None:
        attrs = {k: msg[k] for k in ("requestor", "turn_idx") if msg.get(k) is not None}
        if msg.get("error"):
            attrs["is_error"] = True
        self.out.add(id=sid, kind="tool_result", role="tool", agent="environment", call_id=msg.get("id"),
                     content=as_text(msg.get("content")), timestamp=parse_time(msg.get("timestamp")),
                     attributes=attrs, raw=raw)


class Tau2Bench(Importer):
    name = "tau2_bench"
    self_contained = True
    description = "tau2-bench results JSON ({timestamp, info, tasks, simulations}) as `tau2 run` saves it"

    def sniff(self, head: Head) -> bool:
        return (head.kind == "json" and head.root == "object" and {"info", "tasks"} <= head.keys("")
                and {"agent_info", "user_info"} <= head.keys("info"))

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        run: dict = {}
        if streamed(path):  # one simulation at a time; tau2 writes info and tasks before them
            simulations: Iterable = stream_members(path, "simulations", run)
        else:
            data = load_json(path)
            if not isinstance(data, dict):
                raise ImportFailure(str(path), "expected tau2-bench results: a JSON object with 'simulations'")
            run = {k: v for k, v in data.items() if k != "simulations"}
            simulations = data.get("simulations") or []
            if not isinstance(simulations, list):
                raise ImportFailure(str(path), "'simulations' must be a list")
        tasks: dict | None = None
        n = 0
        for n, sim in enumerate(simulations, start=1):
            if tasks is None:
                tasks = {str(obj(t).get("id")): obj(t) for t in seq(run.get("tasks"))}
            where = f"simulations[{n - 1}]"
            if not isinstance(sim, dict) or not isinstance(sim.get("messages", []), list):
                raise ImportFailure(str(path), "not a tau2-bench simulation (needs a 'messages' list)", where=where)
            if sim.get("ticks") and not sim.get("messages"):
                raise ImportFailure(str(path), "a full-duplex voice simulation (audio 'ticks'): not read", where=where)
            with record_values(path, where):
                item = self._simulation(path, where, sim, obj(run.get("info")), tasks.get(str(sim.get("task_id")), {}),
                                        opts)
            yield item
        if n == 0:
            raise ImportFailure(str(path), "no tau2-bench simulations: a voice run's folder "
                                           "(results.json beside simulations/) is not read")

    def _simulation(self, path: Path, where: str, sim: dict, info: dict, task: dict,
                    opts: ImportOptions) -> ImportedRecord:
        env, agent = obj(info.get("environment_info")), obj(info.get("agent_info"))
        run = _Conversation()
        policy = str_or_none(sim.get("policy")) or str_or_none(env.get("policy"))
        if policy:
            run.out.add(id="policy", kind="system", role="system", agent="system", content=policy)
        messages = seq(sim.get("messages"))
        for i, msg in enumerate(messages):
            if not isinstance(msg, dict):
                raise ImportFailure(str(path), "not a tau2-bench message (needs 'role')", where=f"{where}.messages[{i}]")
            run.message(i, msg)
        run.out.ledger.mapped(len(messages))
        reason = str_or_none(sim.get("termination_reason"))
        if not messages:
            run.out.add(id=f"{where}.termination_reason", kind="error", role="system", agent=SYSTEM,
                        content=f"the simulation ended before any message: {reason}")
        reward = obj(sim.get("reward_info")).get("reward")
        outcome, score = reward_outcome(reward)
        meta: dict = {k: sim[k] for k in _KEPT_RUN if k in sim}
        meta["domain"] = env.get("domain_name")
        meta["run"] = {k: v for k, v in info.items() if k != "environment_info"}
        meta[HIDDEN] = {**{k: sim[k] for k in _HIDDEN_RUN if sim.get(k) is not None},
                        **{f"task_{k}": task[k] for k in _HIDDEN_TASK if task.get(k) is not None}}
        task_id, trial = sim.get("task_id"), sim.get("trial")
        traj = Trajectory(
            id=stable_id(self.name, sim.get("id"), task_id, trial),
            source_format=self.name,
            source_path=str(path),
            source_ref=where,
            title=f"{SYSTEM} {env.get('domain_name') or ''} task {task_id}".replace("  ", " ")
                  + (f" trial {trial}" if trial is not None else ""),
            system=f"{SYSTEM} {agent['implementation']}" if agent.get("implementation") else SYSTEM,
            model=str_or_none(agent.get("llm")),
            benchmark=SYSTEM,
            task=task_text(task, "solo" in str(agent.get("implementation")))
            or next((s.content for s in run.out.steps if s.role == "user" and s.content), None),
            outcome=outcome,
            score=score,
            metadata=meta,
            raw=orjson.dumps(sim),
            steps=run.out.steps,
        )
        return ImportedRecord(trajectory=finish(traj, opts), ledger=run.out.ledger)
