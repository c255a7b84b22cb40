"""InterCode's SQL runs as native trajectories: a small checkout laid out as the repository's,
and the real one when it is on this machine (/tmp/intercode, or $INTERCODE_DIR; skipped where it
is not, as on CI)."""

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from bench.datasets import intercode_sql
from bench.lesson_quality import (
    _instructs_other_literal,
    _recommends,
    is_read_only,
    lesson_figures,
    right_tools_first,
)
from bench.splits import family, split, unseen_split


def episode(task_id: int, query: str, actions, observations, rewards, valid=None) -> dict:
    return {
        "environment": "ic_sql",
        "task_id": task_id,
        "query": query,
        "turn_history": {
            "actions": actions,
            "observations": observations,
            "rewards": rewards,
            "valid_action": valid if valid is not None else [True] * len(observations),
        },
        "summary": {"max_reward": max(rewards), "turns_taken": len(actions)},
        "hardness": "easy",
    }


SINGER = {"singer": ["Singer_ID", "Name", "Country", "Age"], "concert": ["concert_ID", "Year"]}
GOLD = [
    {"db": "concert_singer", "gold": "SELECT count(*) FROM singer", "hardness": "easy",
     "query": "How many singers do we have?", "db_tables": SINGER},
    {"db": "pets_1", "gold": "SELECT PetType FROM pets", "hardness": "easy",
     "query": "What pet types are there?", "db_tables": {"pets": ["PetID", "PetType"]}},
    {"db": "concert_singer", "hardness": "medium", "query": "Name the singers by age.",
     "gold": "SELECT T1.Name FROM singer AS T1 JOIN concert AS T2 ORDER BY T1.Age",
     "db_tables": SINGER},
]  # fmt: skip
LFS_POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 2792388\n"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    spider = tmp_path / "data" / "sql" / "spider"
    spider.mkdir(parents=True)
    (spider / "ic_spider_dev.json").write_text(json.dumps(GOLD))
    for number, model in enumerate(intercode_sql.MODELS):
        folder = tmp_path / "data" / "results" / "sql" / model
        folder.mkdir(parents=True)
        path = folder / f"ic_sql_multiturn_{model}_10_turns.json"
        if model == "vicuna":  # a partial clone: the file is its LFS pointer
            path.write_text(LFS_POINTER)
            continue
        if model == "starchat":  # not in this checkout at all
            folder.rmdir()
            continue
        runs = {
            "0": episode(
                0, GOLD[0]["query"],
                ["SELECT count(*) FROM singers", "Sure! Here it is", "SELECT count(*) FROM singer"],
                ["Error executing query: Table 'concert_singer.singers' doesn't exist",
                 "No SQL code was found in your last response.", "[(6,)]\x00"],
                [0.0, 0.0, 1.0 if number % 2 == 0 else 0.5], [False, False, True],
            ),
            # The harness blocked the second reply: an action with no observation.
            "1": episode(1, GOLD[1]["query"], ["SHOW TABLES", "blocked"], ["[('pets',)]"], [0.0]),
            "2": episode(2, GOLD[2]["query"], ["DESCRIBE singer"], ["[('Name', b'text')]"], [0.0]),
        }  # fmt: skip
        path.write_text(json.dumps(runs))
    return tmp_path


def test_each_run_becomes_a_question_and_its_statements(checkout):
    runs = intercode_sql.load(checkout, every=1)

    first = runs[0]
    assert first.external_id == "intercode-sql-gpt-4-0" and first.split_key == 0
    assert first.group == "0" and first.body["task_type"] == "query"
    steps = first.body["steps"]
    assert steps[0] == {"index": 0, "kind": "user_input", "content": GOLD[0]["query"]}
    assert [s["tool"] for s in steps[1:]] == ["execute_sql"] * 3
    assert steps[1]["arguments"] == {"sql": "SELECT count(*) FROM singers"}
    # MySQL's refusal and the harness's "no SQL in your reply" are errors; a NUL is written \0.
    assert [s["is_error"] for s in steps[1:]] == [True, True, False]
    assert steps[3]["observation"] == "[(6,)]\\0"
    assert first.body["outcome"] == "success"


def test_an_error_the_harness_did_not_mark_is_still_an_error(checkout):
    path = checkout / "data" / "results" / "sql" / "gpt-4" / "ic_sql_multiturn_gpt-4_10_turns.json"
    runs = json.loads(path.read_text())
    runs["0"]["turn_history"]["valid_action"] = [True, True, True]
    path.write_text(json.dumps(runs))

    steps = intercode_sql.load(checkout, every=1)[0].body["steps"]
    assert [s["is_error"] for s in steps[1:]] == [True, False, False]


def test_a_partial_overlap_is_a_failure_and_an_unrun_action_is_left_out(checkout):
    runs = {r.external_id: r for r in intercode_sql.load(checkout, every=1)}

    assert runs["intercode-sql-gpt-3.5-0"].body["outcome"] == "failure"  # reward 0.5
    blocked = runs["intercode-sql-gpt-4-1"].body["steps"]
    assert [s.get("arguments") for s in blocked[1:]] == [{"sql": "SHOW TABLES"}]


def test_an_unreadable_or_missing_model_file_is_skipped(checkout):
    agents = Counter(r.body["agent"] for r in intercode_sql.load(checkout, every=1))

    assert "intercode-vicuna" not in agents and "intercode-starchat" not in agents
    assert set(agents.values()) == {3} and len(agents) == len(intercode_sql.MODELS) - 2


def test_the_gold_of_each_run_is_its_task_s_entry(checkout):
    runs = intercode_sql.load(checkout, every=1)
    by_task = {r.group: r for r in runs if r.split_key == 0}

    assert by_task["2"].meta["gold"] == GOLD[2]["gold"]
    assert by_task["2"].meta["db"] == family(by_task["2"]) == "concert_singer"
    assert by_task["2"].meta["shape"] == "join+order by" and by_task["2"].meta["writes"] == []
    assert {"concert_singer", "singer", "age", "concert_id"} <= set(by_task["2"].meta["schema"])
    assert by_task["1"].meta["schema"] == ["petid", "pets", "pets_1", "pettype"]


def test_a_question_that_is_not_the_gold_file_s_is_refused(checkout):
    (checkout / "data" / "sql" / "spider" / "ic_spider_dev.json").write_text(
        json.dumps([GOLD[1], GOLD[0], GOLD[2]])
    )
    with pytest.raises(ValueError, match="not the gold file's question"):
        intercode_sql.load(checkout, every=1)


def test_every_kth_task_is_read_and_the_slice_takes_the_first_of_those(checkout):
    assert {r.group for r in intercode_sql.load(checkout, every=2)} == {"0", "2"}
    data = split("sql", 1, intercode_dir=checkout)  # the default EVERY (6): task 0 only

    assert {r.group for r in data.probes} == {"0"}
    assert all(r.body["agent"] == "intercode-gpt-4" for r in data.probes)
    assert len(data.history) == len(intercode_sql.MODELS) - 3  # vicuna, starchat unreadable


@pytest.mark.parametrize(
    ("statement", "shape"),
    [
        ("SELECT count(*) FROM singer", "aggregate"),
        ("SELECT name FROM singer WHERE age > 20", "plain"),
        ("SELECT T1.Name FROM people AS T1 JOIN poker_player AS T2 ON T1.People_ID = "
         "T2.People_ID ORDER BY T2.Final_Table_Made", "join+order by"),
        ("SELECT Country, count(*) FROM singer GROUP BY Country", "aggregate+group by"),
        ("SELECT AirportName FROM Airports WHERE AirportCode NOT IN (SELECT SourceAirport FROM "
         "Flights UNION SELECT DestAirport FROM Flights)", "nested"),
        ("SELECT name FROM t WHERE note = 'select the max(x) order by y'", "plain"),  # a string
    ],
)  # fmt: skip
def test_a_query_s_shape_is_its_main_clauses(statement, shape):
    assert intercode_sql.shape(statement) == shape


@pytest.mark.parametrize(
    ("statement", "changed"),
    [
        ("SELECT * FROM singer", set()),
        ("SHOW TABLES", set()),
        ("ALTER TABLE contestants ADD COLUMN votes INT; UPDATE contestants SET votes = 0",
         {"alter", "update"}),
        ("```sql\nDELETE FROM pets WHERE PetID = 1", {"delete"}),
        ("SELECT * FROM t WHERE note = 'x; drop table t'", set()),  # inside a string
        ("CREATE TABLE cars (id INT)", {"create"}),
    ],
)  # fmt: skip
def test_a_statement_s_writes_are_its_parts_writing_verbs(statement, changed):
    assert intercode_sql.writes(statement) == changed


def test_another_case_s_values_and_another_database_s_names_are_other_literals():
    schema = {"concert_singer", "singer", "name", "country", "age", "singer_id"}
    task = "what are the names of singers from france older than 30?"

    def others(statement):
        return intercode_sql.other_literals(statement, task, schema)

    assert others("SELECT T1.Name FROM singer AS T1 WHERE T1.Country = 'France' AND Age > 30") == []
    assert others("SELECT Name FROM singer s WHERE s.Age > 45 ORDER BY Name LIMIT 1") == ["45"]
    assert others("SELECT Name FROM singer WHERE Country = 'Italy'") == ["'Italy'"]
    assert others("SELECT Name FROM poker_player") == ["poker_player"]
    assert others("SELECT count(*) AS n FROM concert_singer.singer WHERE name LIKE '%fran%'") == []
    # A placeholder the cut left open is the product's, and prose sent as SQL is no statement.
    assert others("SELECT Name FROM singer GROUP BY <value from …") == []
    assert others("Can you please provide the name of the table that contains …") == []


def test_the_lesson_figures_read_a_statement_by_what_it_runs(checkout):
    runs = intercode_sql.load(checkout, every=1)
    probe = next(r for r in runs if r.group == "2" and r.split_key == 0)
    assert is_read_only("sql", "execute_sql", ' "SELECT * FROM singer"', set())
    assert not is_read_only("sql", "execute_sql", ' "DROP TABLE singer": it returned "ok"', set())
    # The harness refused prose sent as SQL: forbidding it forbids no read.
    assert not is_read_only("sql", "execute_sql", ' "I apologize for the errors. …"', set())
    # Right tools first: a statement of the gold's shape, quoted outside "do not".
    good = 'When you use execute_sql: call it with "SELECT a FROM x JOIN y ORDER BY b".'
    answers = [{"items": [{"advice": good}]}]
    assert right_tools_first("sql", [probe], answers, runs) == 1.0
    forbidden = 'Do not execute_sql "SELECT a FROM x JOIN y ORDER BY b". Then execute_sql "SHOW'
    answers = [{"items": [{"advice": forbidden + ' TABLES".'}]}]
    assert right_tools_first("sql", [probe], answers, runs) == 0.0
    # Unneeded writes: a quoted writing statement, not the words around it.
    assert _recommends('Then execute_sql "UPDATE singer SET Age = 1".', {"update"}, shell="sql")
    assert not _recommends('Then execute_sql "SELECT 1". Update it.', {"update"}, shell="sql")


def test_another_database_s_statement_is_another_run_s_literal(checkout):
    runs = intercode_sql.load(checkout, every=1)
    probe = next(r for r in runs if r.group == "2" and r.split_key == 0)
    schema, task = set(probe.meta["schema"]), probe.task.lower()

    def literal(advice):
        return _instructs_other_literal(advice, task, {"execute_sql"}, set(), True, schema)

    assert not literal('When you use execute_sql: call it with "SELECT Name FROM singer".')
    assert literal('When you use execute_sql: call it with "SELECT PetType FROM pets".')
    # The request's own value, named as a placeholder, is nobody's literal.
    assert not literal(
        'When you use execute_sql: call it with "SELECT Name FROM singer WHERE Country = '
        "'<value from the request>'\"."
    )
    answers = [{"items": [{"advice": 'When you use execute_sql: call it with "SHOW TABLES".'}]}]
    figures = lesson_figures("sql", runs, [probe], answers)
    assert figures["other_run_identifiers"] == 0 and figures["state_changing_unneeded_share"] == 0


INTERCODE = Path(os.environ.get("INTERCODE_DIR", "/tmp/intercode"))
real = pytest.mark.skipif(
    not (INTERCODE / "data" / "results" / "sql").is_dir(),
    reason="no checkout of princeton-nlp/intercode (set INTERCODE_DIR)",
)


@real
def test_the_real_runs_of_every_sixth_task():
    data = split("sql", None, intercode_dir=INTERCODE)

    # text-davinci-003 has no run of one of the 173 tasks.
    assert len(data.probes) == 173 and len(data.history) == 6 * 173 - 1
    assert [r.group for r in data.probes[:3]] == ["0", "6", "12"]
    assert len({r.meta["db"] for r in data.probes}) == 19  # of Spider's 20 dev databases
    # gpt-4 solves 129 of the 173 (762 of all 1,034 in InterCode's own results).
    assert Counter(r.body["outcome"] for r in data.probes)["success"] == 129
    assert data.probes[1].meta["shape"] == "aggregate+group by"  # for each hometown, how many
    first = data.probes[0]
    assert first.task.startswith("What are the names of poker players, ordered ascending")
    assert first.meta["db"] == "poker_player" and first.meta["shape"] == "join+order by"
    # gpt-4 guessed a table, MySQL refused it, then it looked the tables up.
    steps = first.body["steps"]
    refused = steps[1]["observation"]
    assert steps[1]["is_error"] and "poker_player.poker_players' doesn't exist" in refused
    assert steps[2]["arguments"] == {"sql": "SHOW TABLES"} and not steps[2]["is_error"]
    # Spider's gold only reads.
    assert all(r.meta["writes"] == [] for r in data.probes)


@real
def test_the_real_tasks_never_seen_are_asked_of_a_database_the_history_queried():
    data = unseen_split(split("sql", None, intercode_dir=INTERCODE))

    assert data is not None and len(data.probes) == 34
    known = {family(r) for r in data.history}
    assert all(family(p) in known for p in data.probes)
    assert not {p.group for p in data.probes} & {r.group for r in data.history}
