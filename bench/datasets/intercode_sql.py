"""InterCode's SQL runs (princeton-nlp/intercode, `data/results/sql/`) as native trajectories.

An SQL agent on Spider's dev questions (1,034 over 20 MySQL databases, `data/sql/spider/
ic_spider_dev.json`: a list whose index is the task id, each entry its question `query`, `db`,
`gold` query, `hardness` and `db_tables`) in up to 10 turns, one JSON file per model:
`{task_id: {"query", "task_id", "turn_history": {"actions", "observations", "rewards",
"valid_action"}, "summary": {"max_reward", ...}, "hardness"}}` (`ic_sql_multiturn_<model>_10_
turns.json`; the handicapped, 1-turn, plan-and-solve, ReAct and human files are other set-ups,
not read). The checkout is the Bash one's (bench/datasets/intercode.py): `--dataset sql
--intercode DIR`. MODELS[0]'s (gpt-4's) runs are the probes, the six other models' runs of the
same tasks the history. Each run:

* step 0, `user_input`: the question;
* each action -> `tool_call` `execute_sql` `{"sql": action}`, its observation (cut at
  intercode.OBSERVATION_CHARS, a NUL written `\\0`, as for Bash) and `is_error` when the harness
  marked the action invalid (a reply with no SQL in it) or MySQL refused it (the observation
  starts with "Error executing query");
* outcome: success when the best reward is 1.0 (InterCode's SQL reward is the rows' overlap with
  the gold's, scaled by their order's agreement: 1.0 is the gold's rows in the gold's order).

EVERY: the bench reads every sixth task (task id 0, 6, 12, …: 173 tasks, 1,210 runs, 19 of the
20 databases, all but real_estate_properties and its 4 questions; the ids are not grouped by
database, so the sample is spread) by default: all 1,034 tasks are 7,236 runs, six times the
review a bench run affords on two cores (every fifth task, 1,449 runs, took 10.7 minutes with
`--serial`; every sixth 6 to 9, as busy as the machine is). `load(repo, every=1)` reads all.

The gold (for bench/lesson_quality.py and bench/splits.family, never for the product): the
gold query, its database (`db`) and that database's name, tables and columns (`schema`), the
gold's `shape` (its main clauses, below) and its writes: none, Spider's queries only read
(WRITING: the statements that would change the database, for the lessons' figures).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.datasets import Run
from bench.datasets.intercode import episode_steps

# MODELS[0] answers the probes; the rest are the history (their runs of the same tasks).
MODELS = ["gpt-4", "gpt-3.5", "text-davinci-003", "chat-bison-001", "text-bison-001",
          "starchat", "vicuna"]  # fmt: skip
EVERY = 6
TOOLS = ["execute_sql"]
ENVIRONMENT = ["mysql"]  # InterCode's SQL environment is a MySQL server (SHOW TABLES, DESCRIBE)

# A statement that changes the database, by its first word (`replace into` as MySQL's insert).
WRITING = frozenset(
    "insert update delete replace merge create drop alter truncate rename grant revoke".split()
)
READING = frozenset("select with show describe desc explain use".split())
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_STATEMENT_START = re.compile(r"^\s*(?:```(?:sql\b)?)?[\s(`]*([A-Za-z]+)", re.I)  # ```sql fence

# The gold's shape: which of these main clauses it has, sorted and joined by "+", or "plain".
_CLAUSES = {
    "join": re.compile(r"\bjoin\b", re.I),
    "group by": re.compile(r"\bgroup\s+by\b", re.I),
    "order by": re.compile(r"\border\s+by\b", re.I),
    "aggregate": re.compile(r"\b(?:count|sum|avg|min|max)\s*\(", re.I),
}


def writes(statement: str) -> set[str]:
    """The writing verbs (WRITING) that start one of the statement's `;`-separated parts
    (`ALTER TABLE …; UPDATE …` -> {"alter", "update"}); quoted strings are not read. A statement
    as advice quotes it (` "DROP TABLE t": it returned …`) is read from its opening quote."""
    found = set()
    statement = re.sub(r'^\s*"', "", statement)  # no statement starts with a string
    for part in _STRING.sub("''", statement).split(";"):
        first = _STATEMENT_START.match(part)
        if first and first.group(1).lower() in WRITING:
            found.add(first.group(1).lower())
    return found


def reads(statement: str) -> bool:
    """A statement that only reads: its first word one of READING and no part of it writing.
    The prose a model sent in place of SQL ("Can you please provide the name of the table …",
    which the harness refused) is no statement, and does not read."""
    first = _STATEMENT_START.match(re.sub(r'^\s*"', "", statement))
    return bool(first and first.group(1).lower() in READING and not writes(statement))


def shape(statement: str) -> str:
    """The main clauses a query is built of, a documented coarse kind of query: `join`, `group
    by`, `order by`, `aggregate` (COUNT / SUM / AVG / MIN / MAX) and `nested` (a second SELECT:
    a subquery, or a UNION / INTERSECT / EXCEPT), sorted and joined by "+"; "plain" with none
    (`SELECT name FROM singer WHERE age > 20`). Quoted strings are not read."""
    text = _STRING.sub("''", statement)
    clauses = {name for name, pattern in _CLAUSES.items() if pattern.search(text)}
    if len(re.findall(r"\bselect\b", text, re.I)) > 1:
        clauses.add("nested")
    return "+".join(sorted(clauses)) or "plain"


_KEYWORDS = frozenset(
    """select from where join inner left right outer cross natural on using as and or not in is
    null like between group by order having limit offset distinct all any some exists union
    intersect except asc desc case when then else end show tables columns databases describe
    explain use with true false full
    information_schema table_schema table_name column_name""".split()
)  # SQL's words, and MySQL's catalog (information_schema.tables …): the engine's, no case's
# An alias: `AS n`, or the word after a table (`FROM singer T1`) that is no clause's keyword.
_ALIAS = re.compile(
    r"\bas\s+(\w+)|\b(?:from|join)\s+\w+\s+(?!(?:as|on|where|join|group|order|limit|inner|left|"
    r"right|cross|natural|using|having|union|intersect|except)\b)(\w+)",
    re.I,
)


def other_literals(statement: str, task: str, schema: set[str]) -> list[str]:
    """The words of a statement that belong to another case than the task's: a quoted value or
    a number of two digits or more that the request (`task`, lower case) does not hold, a table
    or column name that the task's database (`schema`, lower case) does not have. SQL's words,
    functions (a word before "("), aliases (`AS n`, `FROM singer T1`) and placeholders (blanked
    by the caller; one a cut left open, `<value from …`, here) are nobody's; prose sent as SQL
    (no word of READING or WRITING first) is no statement and has none."""
    first = _STATEMENT_START.match(statement)
    if not first or first.group(1).lower() not in READING | WRITING:
        return []
    statement = re.sub(r"<[^<>]*$", " ", statement)
    found = []
    for quoted in _STRING.findall(statement):
        value = quoted[1:-1].strip("% ").lower()  # a LIKE pattern's own wildcards aside
        if value and value not in task:
            found.append(quoted)
    text = _STRING.sub(" ", statement).replace("`", "")
    aliases = {(a or b).lower() for a, b in _ALIAS.findall(text)}
    for number in re.findall(r"(?<![\w.])\d{2,}(?:\.\d+)?\b", text):
        if number not in task:
            found.append(number)
    for match in re.finditer(r"\b[A-Za-z_]\w*\b(?!\s*\()", text):
        name = match.group().lower()
        if name in _KEYWORDS or name in aliases or name in schema or name in task:
            continue
        found.append(match.group())
    return found


def _episode(model: str, task_id: int, episode: dict, gold: dict) -> Run:
    steps = episode_steps(episode, "execute_sql", "sql", refused="Error executing query")
    reward = float(episode["summary"]["max_reward"])
    task = str(task_id)
    body = {
        "external_id": f"intercode-sql-{model}-{task}",
        "agent": f"intercode-{model}",
        "task": episode["query"],
        "task_type": "query",  # a question answered by reading (the API's query / operation …)
        "environment": ENVIRONMENT,
        "outcome": "success" if reward >= 1.0 else "failure",
        "steps": steps,
        "metadata": {"dataset": "intercode-sql", "model": model, "task": task, "reward": reward},
    }
    schema = {gold["db"].lower()} | {t.lower() for t in gold["db_tables"]}
    schema |= {c.lower() for columns in gold["db_tables"].values() for c in columns}
    meta = {"gold": gold["gold"], "db": gold["db"], "schema": sorted(schema),
            "shape": shape(gold["gold"]), "writes": sorted(writes(gold["gold"])),
            "hardness": gold["hardness"]}  # fmt: skip
    return Run(body=body, dataset="sql", group=task, split_key=MODELS.index(model), meta=meta)


def load(repo: Path, every: int = EVERY) -> list[Run]:
    """Every run of MODELS on every `every`-th task (task id ≡ 0 mod `every`), in task order
    (runs of a task together, MODELS' order). A model's file that is missing or not JSON (a git
    LFS pointer in a partial clone) is skipped, as Bash's missing file is."""
    gold = json.loads((repo / "data" / "sql" / "spider" / "ic_spider_dev.json").read_text())
    runs = []
    for model in MODELS:
        name = f"ic_sql_multiturn_{model}_10_turns.json"
        path = repo / "data" / "results" / "sql" / model / name
        try:
            episodes = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for episode in episodes.values():
            task_id = int(episode["task_id"])
            if task_id % every:
                continue
            if episode["query"] != gold[task_id]["query"]:  # the results name a gold index
                raise ValueError(f"{model} task {task_id}: not the gold file's question")
            runs.append(_episode(model, task_id, episode, gold[task_id]))
    runs.sort(key=lambda r: (int(r.group), r.split_key))
    return runs
