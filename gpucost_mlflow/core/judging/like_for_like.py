"""Like for like, or no verdict (issue 51, item 3): a variant judged against the reference must ask the same of the
model as the reference does, or its agreement measures another task.

Each output names the settings that decide what is asked (`LIKE_FOR_LIKE` of its rules: `max_length` and `padding`
for labels and embeddings, `max_new_tokens` for generated text). The prompt template, chat template, decoding rules
(greedy: no temperature, top-p, top-k or seed to differ) and the tokenizer revision are the same for every variant
by construction: the protocol's generation section fixes the first ones, and a reference is looked up at the pass's
own model revision. A variant that differs in one of these settings is "not comparable", naming it, unless the
protocol declares that setting a change of work (`acceptance.reference.changes_work`); then it is judged against the
reference as any other variant is. Pure: plain settings in, a check out.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from gpucost_mlflow.core.judging.verdicts import Check

CHECK = "comparable"  # the check's name; its failure makes the quality verdict "not comparable"
NOT_COMPARABLE = "not comparable"


def unlike(settings, reference_settings, fields: Sequence[str], declared: Collection[str]) -> list[str]:
    """The settings among `fields` in which the variant asks other work than the reference, not declared a change of
    work: 'max_length 32 against 256'."""
    found = []
    for name in fields:
        mine, theirs = getattr(settings, name, None), getattr(reference_settings, name, None)
        if mine != theirs and name not in declared:
            found.append(f"{name} {mine} against {theirs}")
    return found


def check(settings, reference_settings, reference_name: str, fields: Sequence[str],
          declared: Collection[str]) -> Check | None:
    """The failed `comparable` check of a variant that asks other work than the reference; None when it asks the
    same (or every difference is declared a change of work)."""
    differences = unlike(settings, reference_settings, fields, declared)
    if not differences:
        return None
    names = ", ".join(item.split(" ", 1)[0] for item in differences)
    return Check(CHECK, False, f"{NOT_COMPARABLE} with {reference_name}: {'; '.join(differences)} (the reference's "
                               f"agreement would measure another task; declare {names} under "
                               "acceptance.reference.changes_work to compare it as a change of work)")


def verdict(checks: Sequence[Check]) -> str:
    """'not comparable: max_length' when a variant asked other work than the reference, else ''."""
    for found in checks:
        if found.name == CHECK and not found.passed:
            head = found.reason.split(": ", 1)[-1].split(" (", 1)[0]
            return f"{NOT_COMPARABLE}: " + ", ".join(item.split(" ", 1)[0] for item in head.split("; "))
    return ""
