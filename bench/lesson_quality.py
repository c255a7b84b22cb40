"""Would an agent that followed the served advice do better? What recall's items *say*, judged
with each dataset's own gold, never with the product's own labels.

Per dataset (the figures of issue 23), each read in what the agent is shown (bench.judged
.served_text: a same-case item's replay, any other item's advice):

* `forbids_read_only` — of the "do not …" instructions in the distinct served texts, those whose
  forbidden call is a read-only call (the dataset's gold: τ-bench's tools that change nothing,
  bench/datasets/tau.write_tools; HotpotQA's Search / Lookup, WebShop's search and every click
  but "Buy Now", a shell command that runs no program of bench/datasets/intercode.WRITING and
  redirects to no file, a SQL statement that reads, intercode_sql.reads) that did not fail (the
  instruction does not say it returned an error or nothing, nor a program's diagnostic:
  `it returned "find: missing argument to -exec"`);
* `junk_consequences` — distinct served texts whose consequence is a list of JSON keys (`a
  result with id, status, …`) or raw JSON;
* `other_run_identifiers` — served items (probe × item) that instruct a literal the new task does
  not contain (outside named placeholders and quoted consequences such as `it returned "…"`): an
  identifier (a token with a digit or an underscore) or a quoted value that is not
  constant across the dataset's runs (a value in ≥ 10 % of the history's calls, like "Buy Now",
  is constant; in a shell command, a file name, glob or path; in a SQL statement, a value the
  request does not hold or a name the probe's database does not have, intercode_sql
  .other_literals). Items marked `same_instance` (an exact replay for the same case) are
  excepted and counted apart;
* `state_changing_unneeded` — probes for which one of the first three items tells the agent to
  make a state-changing call (the gold's writes, named outside a "do not" clause, the "When you
  use X:" condition an item opens with and a "… before you X" warning) that the probe's gold
  does not need (τ-bench: its gold actions; HotpotQA: Finish is always needed; InterCode Bash:
  the writing programs of its gold command, a program such as `rm` named in the advice; InterCode
  SQL: none, Spider's gold only reads, so a writing statement quoted in the advice);
  `state_changing_unneeded_hand_offs_aside`, the same without the hand-off to a person (τ-bench
  counts it as a write; a replay of a success that changed nothing and "handed the case to a
  person" tells of it, its tool named or not): a labelled line, not the headline;
* `wrong_write_warned` — probes whose task failed in the history through a wrong write (a write
  the gold does not have, by name and arguments): the share where one of the first three items
  warns of that write ("do not" / "avoid" naming its tool, "… before you <tool>", or a failed
  run's replay asking to check the changes it names);
* `block_chars_median` — the prompt block's length at the median.
"""

from __future__ import annotations

import re
from collections import Counter
from statistics import median
from typing import Any

from bench.datasets import Run, intercode, intercode_sql
from bench.datasets.tau import HAND_OFF
from bench.judged import served_text

# A quoted call ("find … -exec rm {} \\; | wc -l") is one piece: its "; " ends no clause.
_DO_NOT = re.compile(
    r"\b(?:do not|don't|never|avoid)\s+((?:\"[^\"]*\"|[^\"]|\")+?)(?=\.\s|\.$|;\s|$)", re.I
)
# A failure's words, or a program's diagnostic (`it returned "find: missing argument …"`, the
# stderr convention "<program>: <what went wrong>").
_FAILED_WORDS = re.compile(
    r"\b(error|errored|failed|could not|couldn't|no results?|nothing|not found|invalid|refused|"
    r"incorrect|empty|cannot|can't|missing|unexpected|unknown|malformed|no such|timed out|"
    r"denied|unrecognized|illegal)\b|returned \"(?:…|[\w./-]+): ",
    re.I,
)
_KEY_LIST = re.compile(r"\ba result with [\w.]+(?:, [\w.]+)+|led to \"?[{\[]")
_IDENTIFIER = re.compile(r"\b(?=\w*\d)(?=\w*[A-Za-z])\w{4,}\b|\b[a-z]+_[a-z0-9_]+\b")
_QUOTED = re.compile(r'"([^"]{2,80})"')
_WARNS = re.compile(r"\b(do not|don't|never|avoid|warn|before you)\b", re.I)


# ---------------------------------------------------------------------------- the gold


def tools_of(data_dataset: str, runs: list[Run]) -> set[str]:
    tools = set()
    for run in runs:
        for step in run.body.get("steps", []):
            if step.get("tool"):
                tools.add(step["tool"])
        for message in run.body.get("messages", []):
            for call in message.get("tool_calls") or []:
                tools.add(call["function"]["name"])
    return tools


def writes_of(dataset: str, runs: list[Run]) -> set[str]:
    """The state-changing tools by the dataset's gold."""
    if dataset == "tau":
        return {w for r in runs for w in r.meta.get("writes", [])}
    if dataset == "hotpotqa":
        return {"Finish"}
    if dataset == "bash":  # the programs that change the file system, named in a command
        return set(intercode.WRITING)
    if dataset == "sql":  # the statements that change the database (INSERT, UPDATE, ALTER …)
        return set(intercode_sql.WRITING)
    return set()  # WebShop: "Buy Now" is a click, judged by its argument


def is_read_only(dataset: str, tool: str, argument: str, writes: set[str]) -> bool:
    if dataset == "webshop":
        return tool == "search" or (tool == "click" and "buy now" not in argument.lower())
    if dataset == "bash":
        return not intercode.writes(argument)
    if dataset == "sql":  # a statement that reads (prose sent as SQL is no call)
        return intercode_sql.reads(argument)
    return tool not in writes


def _gold_needs(dataset: str, run: Run) -> set[str]:
    if dataset == "tau":
        return {a["name"] for a in run.meta.get("gold_actions", [])} & set(run.meta["writes"])
    if dataset == "hotpotqa":
        return {"Finish"}
    if dataset in ("bash", "sql"):  # SQL: none, Spider's gold only reads
        return set(run.meta["writes"])
    return set()


def _calls(run: Run) -> list[tuple[str, Any]]:
    if "steps" in run.body:
        return [(s["tool"], s.get("arguments")) for s in run.body["steps"] if s.get("tool")]
    import json

    calls = []
    for message in run.body.get("messages", []):
        for call in message.get("tool_calls") or []:
            try:
                arguments = json.loads(call["function"].get("arguments") or "{}")
            except ValueError:
                arguments = {}
            calls.append((call["function"]["name"], arguments))
    return calls


def _wrong_writes(run: Run, writes: set[str]) -> set[str]:
    """The write tools a failed τ-bench run called that its gold does not have (by name and
    arguments)."""
    gold = [(a["name"], a.get("kwargs", {})) for a in run.meta.get("gold_actions", [])]
    wrong = set()
    for tool, arguments in _calls(run):
        if tool in writes and (tool, arguments) not in gold:
            wrong.add(tool)
    return wrong


def constant_values(runs: list[Run]) -> set[str]:
    """Argument values in at least 10 % of the runs (controls, not instances)."""
    counts: Counter[str] = Counter()
    for run in runs:
        seen = set()
        for _, arguments in _calls(run):
            values = arguments.values() if isinstance(arguments, dict) else [arguments]
            seen |= {str(v).strip().lower() for v in values if isinstance(v, str | int)}
        counts.update(seen)
    return {v for v, c in counts.items() if c >= max(2, len(runs) // 10)}


# ---------------------------------------------------------------------------- the figures


def forbidden_calls(advice: str, tools: set[str]) -> list[tuple[str, str, str]]:
    """(tool, its argument text, the whole clause) of each "do not …" instruction."""
    found = []
    for match in _DO_NOT.finditer(advice):
        clause = match.group(1)
        words = re.findall(r"[\w.-]+", clause)
        tool = next((w for w in words[:6] if w in tools), "")
        if tool:
            after = clause.split(tool, 1)[1]
            found.append((tool, after, clause))
    return found


_CHECK_BEFORE = re.compile(r"\bbefore you ([\w-]+(?:\.[\w-]+)*)", re.I)  # "fs.read", no full stop
# A failed run's replay: "…; after X <what happened>; its changes were X, Y: check each change
# against the request and the rules …" names the changes to check, not to make.
_CHECK_CHANGES = re.compile(
    r"(?:; after [^;]*)?;[^;]*: check (?:each|that) change against the request[^;.]*", re.I
)


def warned_tools(advice: str, tools: set[str]) -> set[str]:
    """The tools an item warns of: forbidden ("do not X …"), to be checked first ("check it
    … before you X"), or changes a failed run made, to be checked ("check each change …")."""
    found = {tool for tool, _, _ in forbidden_calls(advice, tools)}
    checked = {w for c in _CHECK_CHANGES.findall(advice) for w in re.findall(r"[\w.-]+", c)}
    return found | (checked & tools) | {t for t in _CHECK_BEFORE.findall(advice) if t in tools}


def lesson_figures(
    dataset: str,
    history: list[Run],
    probes: list[Run],
    answers: list[dict],
) -> dict:
    tools = tools_of(dataset, history)
    writes = writes_of(dataset, history + probes)
    constants = constant_values(history)
    served = {served_text(item) for answer in answers for item in answer["items"]}

    instructions = read_only_forbidden = 0
    junk = 0
    for text in served:
        for tool, argument, clause in forbidden_calls(text, tools):
            instructions += 1
            if is_read_only(dataset, tool, argument, writes) and not _FAILED_WORDS.search(clause):
                read_only_forbidden += 1
        junk += bool(_KEY_LIST.search(text))

    literal_items = replay_items = items = 0
    unneeded = unneeded_aside = 0
    warned = warn_cases = 0
    failed_writes: dict[str, set[str]] = {}
    for run in history:
        if run.body["outcome"] != "success" and dataset == "tau":
            failed_writes.setdefault(run.group, set()).update(_wrong_writes(run, writes))
    for probe, answer in zip(probes, answers, strict=True):
        task = probe.task.lower()
        for item in answer["items"]:
            items += 1
            if item.get("same_instance"):
                replay_items += 1
                continue
            schema = set(probe.meta["schema"]) if dataset == "sql" else None
            shell = dataset in ("bash", "sql")
            if _instructs_other_literal(item["advice"], task, tools, constants, shell, schema):
                literal_items += 1
        first = answer["items"][:3]
        needs = _gold_needs(dataset, probe)
        shell = "sql" if dataset == "sql" else dataset == "bash"
        asked = probe.task
        if any(_recommends(served_text(i), writes - needs, shell=shell, task=asked) for i in first):
            unneeded += 1
        aside = writes - needs - {HAND_OFF}
        if any(_recommends(served_text(i), aside, shell=shell, task=asked) for i in first):
            unneeded_aside += 1
        wrong = failed_writes.get(probe.group, set())
        if wrong:
            warn_cases += 1
            # As the module docstring defines it: "do not X" or "… before you X" (warned_tools).
            if any(wrong & warned_tools(served_text(i), tools) for i in first):
                warned += 1
    blocks = [len(a.get("prompt_block", "")) for a in answers]
    return {
        "served_texts": len(served),
        "do_not_instructions": instructions,
        "forbids_read_only": read_only_forbidden,
        "junk_consequences": junk,
        "items": items,
        "other_run_identifiers": literal_items,
        "other_run_identifiers_share": round(literal_items / items, 3) if items else 0.0,
        "same_instance_items": replay_items,
        "state_changing_unneeded_share": round(unneeded / len(probes), 3) if probes else 0.0,
        "state_changing_unneeded_hand_offs_aside_share": (
            round(unneeded_aside / len(probes), 3) if probes else 0.0
        ),
        "wrong_write_cases": warn_cases,
        "wrong_write_warned_share": round(warned / warn_cases, 3) if warn_cases else None,
        "block_chars_median": int(median(blocks)) if blocks else 0,
    }


_PLACEHOLDER = re.compile(r"<[^<>]{1,80}>")
# What happened, quoted (an error text, the user's words): a consequence, not an instruction.
_REPORTED = re.compile(r'\b(returned|said|replied|says|was) "[^"]*"')


# In a shell command, the words that are one case's values: a file name or glob with an extension
# ("*.php", "notes.txt"), a path; the programs, options and syntax are the same next time.
_SHELL_VALUE = re.compile(r"^[\w*?\[\]-]*\.[A-Za-z]\w*$")
_COMMAND_START = re.compile(r'\b(?:bash|execute_sql|with) "')
_COMMAND_END = re.compile(r'"(?=[;:.,]?(?:\s|$))')


def _quoted_commands(text: str) -> list[str]:
    """The commands quoted after `bash`, `execute_sql` or `call it with`, each to the quote that
    closes it (the quotes inside balanced: `find -name "*.o" -exec rm {} ;` is one command)."""
    found = []
    for start in _COMMAND_START.finditer(text):
        for end in _COMMAND_END.finditer(text, start.end()):
            command = text[start.end() : end.start()]
            if command.count('"') % 2 == 0:
                found.append(command)
                break
    return found


def _without_quoted_commands(text: str) -> str:
    for command in _quoted_commands(text):
        text = text.replace(f'"{command}"', " ", 1)
    return text


def _instructs_other_literal(
    advice: str, task: str, tools: set[str], constants: set[str], shell=False, schema=None
) -> bool:
    """`shell`: the tool runs command lines (InterCode Bash), whose quoted commands are judged
    by their words (_SHELL_VALUE) rather than whole: "-type f | wc -l" is no case's value.
    `schema` (InterCode SQL, with `shell`; a set): the names of the probe's database, its quoted
    statements judged by intercode_sql.other_literals."""
    # Named placeholders (<user_id from …>) and reported words are no instruction of a literal.
    advice = _REPORTED.sub(" ", _PLACEHOLDER.sub(" ", advice))
    commands = _quoted_commands(advice) if shell else []
    if shell:
        advice = _without_quoted_commands(advice)
    for token in _IDENTIFIER.findall(advice):
        if token in tools or token.lower() in task:
            continue
        return True
    if schema is not None:  # SQL statements: their values and names (intercode_sql)
        return any(intercode_sql.other_literals(c, task, schema) for c in commands)
    for command in commands:
        programs = set(intercode.programs(command))
        for word in command.replace('"', " ").replace("'", " ").split():
            if "/dev/" in word:  # 2>/dev/null: syntax, not a case's file
                continue
            name = re.sub(r"^[*?./]+", "", word.rsplit("/", 1)[-1]).strip("*?()").lower()
            value = _SHELL_VALUE.search(word.rsplit("/", 1)[-1]) or "/" in word.strip("/*")
            identifier = _IDENTIFIER.fullmatch(word) and word not in programs
            if (value or identifier) and name and name not in task and name not in constants:
                return True
    if shell:
        return False
    for quoted in _QUOTED.findall(advice):
        value = quoted.strip().lower()
        if value in task or value in constants or value in {t.lower() for t in tools}:
            continue
        return True
    return False


_CONDITION = re.compile(r"\bwhen you use [\w.-]+[:,]", re.I)
# The words a replay tells a hand-off to a person with (heuristic/replay.py), its tool unnamed.
_HANDED_OVER = re.compile(r"\bhanded the case to a person\b")
# A recipe for X ("When you use X, first A; call it with …", "When you use X: call it with …")
# pushes X itself; a lesson's "When you use X: do not …" only says where it applies.
_RECIPE = re.compile(r"^when you use ([\w.-]+)(?:, first |: call it )", re.I)


# A recipe for a purpose the request names: "When you use bash to remove all files: …" (the
# verb is the first word of the purpose).
_PURPOSE = re.compile(r"^when you use [\w.-]+ to (\w+)[^:,]*[:,]", re.I)


def _recommends(advice: str, unneeded: set[str], *, shell: bool | str = False, task="") -> bool:
    """The advice tells the agent to call one of `unneeded`: the tool a recipe is for, or one
    named outside a "do not" clause, a "… before you X" warning and the "When you use X:"
    condition a lesson starts with. `shell`: `unneeded` are programs, and a quoted command
    recommends those it runs to change files (intercode.writes: `gunzip -c` only prints;
    `shell="sql"`: a quoted statement's writing verbs, intercode_sql.writes). A
    recipe for a purpose (`When you use bash to remove:`) that `task` does not name (no word of
    it starts with the verb) is pushed on nobody."""
    if not unneeded:
        return False
    purpose = _PURPOSE.match(advice)
    if purpose and task and not re.search(rf"\b{re.escape(purpose.group(1))}", task, re.I):
        return False
    recipe = _RECIPE.match(advice)
    if recipe and recipe.group(1) in unneeded:
        return True
    if HAND_OFF in unneeded and _HANDED_OVER.search(advice):
        return True  # a replay tells of the hand-off without its tool's name
    # "check it … before you X" warns of X (warned_tools): not a push to make the call either.
    kept = _CHECK_CHANGES.sub(" ", advice)
    kept = _CHECK_BEFORE.sub(" ", _CONDITION.sub(" ", _DO_NOT.sub(" ", kept)))
    if shell:
        judge = intercode_sql if shell == "sql" else intercode
        return any(judge.writes(c) & unneeded for c in _quoted_commands(kept))
    words = set(re.findall(r"[\w.-]+", kept))
    return bool(words & unneeded)


def right_tools_first(
    dataset: str, probes: list[Run], answers: list[dict], history: list[Run]
) -> float:
    """Of the probes, the share whose first item names the tools the task needs: τ-bench, its
    gold actions' tools (all of them; a task needing none counts when the item recommends no
    write, as the unneeded-writes figure reads it: a lesson warning of a change is right there);
    HotpotQA, Search and Finish; WebShop, search and click; InterCode Bash, the gold command's
    operative program (bench/datasets/intercode.operative_program); InterCode SQL, a statement
    quoted outside "do not" of the gold's shape (intercode_sql.shape: its main clauses)."""
    writes = writes_of(dataset, history + probes)
    good = 0
    for probe, answer in zip(probes, answers, strict=True):
        if not answer["items"]:
            continue
        advice = served_text(answer["items"][0])
        named = set(re.findall(r"[\w.-]+", _DO_NOT.sub(" ", advice)))
        if dataset == "tau":
            needs = _gold_needs(dataset, probe)
            good += needs <= named if needs else not _recommends(advice, writes)
        elif dataset == "hotpotqa":
            good += {"Search", "Finish"} <= named
        elif dataset == "bash":
            good += probe.meta["program"] in named
        elif dataset == "sql":
            shapes = {intercode_sql.shape(c) for c in _quoted_commands(_DO_NOT.sub(" ", advice))}
            good += probe.meta["shape"] in shapes
        else:
            good += {"search", "click"} <= named
    return round(good / len(probes), 3) if probes else 0.0
