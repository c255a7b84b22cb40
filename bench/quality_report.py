"""The human-readable lines bench/quality.py prints before its JSON line."""

from __future__ import annotations

from bench.gold import LABELS


def print_figures(result: dict, datasets: list[str]) -> None:
    for name in datasets:
        figures = result[name]
        print(f"{name}: {figures['history']} history runs, {figures['probes']} probes")
        for system in ("project", "tfidf_tasks", "minilm_tasks"):
            f = figures[system]
            print(f"  {system:13} hit@1 {f['hit@1']:.3f}  hit@3 {f['hit@3']:.3f}  "
                  f"hit@5 {f['hit@5']:.3f}  MRR {f['mrr']:.3f}")  # fmt: skip
        if "unseen" in figures:
            f = figures["unseen"]["project"]
            best = max(figures["unseen"][b]["hit@3"] for b in ("tfidf_tasks", "minilm_tasks"))
            print(f"  unseen tasks: hit@3 {f['hit@3']:.3f} (best baseline {best:.3f}), right "
                  f"tools first {figures['unseen']['right_tools_first']}")  # fmt: skip
            later = figures["unseen"].get("before_first_write")
            if later:
                best = max(later[b]["hit@3"] for b in ("tfidf_tasks", "minilm_tasks"))
                print(f"  unseen, recalled again before the first write: hit@3 "
                      f"{later['project']['hit@3']:.3f} (best baseline {best:.3f}), right tools "
                      f"first {later['right_tools_first']}")  # fmt: skip
        lessons = figures["lessons"]
        print(
            f"  lessons: forbid read-only {lessons['forbids_read_only']} of "
            f"{lessons['do_not_instructions']}, junk consequences "
            f"{lessons['junk_consequences']} of {lessons['served_texts']}, other runs' "
            f"literals {lessons['other_run_identifiers_share']}, unneeded writes "
            f"{lessons['state_changing_unneeded_share']} (hand-offs aside "
            f"{lessons['state_changing_unneeded_hand_offs_aside_share']}), wrong write warned "
            f"{lessons['wrong_write_warned_share']}, block {lessons['block_chars_median']}"
        )
        for label, judged in (("", figures.get("judged")),
                              (" (unseen)", figures.get("unseen", {}).get("judged"))):  # fmt: skip
            if judged and judged.get("covered"):
                print(
                    f"  hand-judged{label}: {judged['covered']} of {judged['served']} served "
                    f"items ({judged['covered_for_their_task']} for their task), helpful "
                    f"{judged['helpful_share']}, misleading {judged['misleading_share']}"
                )
        review = figures["review"]
        print(f"  yield {review['yield']:.3f} {review['yield_by_outcome']}; proposals/100 "
              f"{review['proposals_per_100']}; problems {review['advice_problems']}")  # fmt: skip
    if result.get("gold"):
        gold = result["gold"]
        print(f"gold set: {gold['steps']} steps, kappa {gold['kappa']}, " + ", ".join(
            f"{label} P {gold[label]['precision']} R {gold[label]['recall']}" for label in LABELS
        ))  # fmt: skip
