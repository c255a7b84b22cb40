"""The hand-judged figures (bench/judged.py): a judgement made for the task an item was served to
beats the judgement of its text; a served text nobody judged is left out and counted as such."""

import json

from bench import judged


def test_a_judgement_for_the_task_beats_the_text_s(tmp_path, monkeypatch):
    replay = 'The same case ran before (failure): cancel_reservation "8C8K4E" …'
    entries = [
        {
            "dataset": "tau",
            "text": replay,
            "judgement": "misleading",
        },  # most servings: another task
        {"dataset": "tau", "text": replay, "group": "28", "judgement": "helpful"},  # its own task
        {"dataset": "tau", "text": "When you use X: …", "judgement": "neutral"},
        {"dataset": "webshop", "text": "When you use X: …", "judgement": "helpful"},
    ]
    path = tmp_path / "judged.json"
    path.write_text(json.dumps({"experiences": entries}))
    monkeypatch.setattr(judged, "JUDGED", path)

    def answer(*texts):
        return {"items": [{"advice": t} for t in texts]}

    answers = [answer(replay, "When you use X: …"), answer(replay, "unjudged")]
    figures = judged.judged_figures("tau", answers, ["28", "29"])
    # task 28: helpful (its own judgement) + neutral; task 29: misleading (the text's); 1 unjudged
    assert (figures["served"], figures["covered"], figures["covered_for_their_task"]) == (4, 3, 1)
    assert (figures["helpful_share"], figures["misleading_share"]) == (0.333, 0.333)
    # Without the groups, every item takes its text's judgement.
    assert judged.judged_figures("tau", answers)["helpful_share"] == 0.0
