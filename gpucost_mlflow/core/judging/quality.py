"""Quality against gold labels: accuracy and macro-F1, overall, per length bucket and per class."""

from __future__ import annotations

from collections.abc import Sequence

from gpucost_mlflow.core.names import ACCURACY, MACRO_F1


def per_class(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> dict[str, dict]:
    """Precision, recall, F1 and support per label; a ratio with a zero denominator is 0 (sklearn's rule)."""
    scores = {}
    for label in labels:
        tp = sum(1 for g, p in zip(gold, predicted) if g == label and p == label)
        fp = sum(1 for g, p in zip(gold, predicted) if g != label and p == label)
        fn = sum(1 for g, p in zip(gold, predicted) if g == label and p != label)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores[label] = {"precision": precision, "recall": recall, "f1": f1, "support": tp + fn}
    return scores


def accuracy(gold: Sequence[str], predicted: Sequence[str]) -> float:
    return sum(1 for g, p in zip(gold, predicted) if g == p) / len(gold) if gold else 0.0


def macro_f1(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> float:
    """Mean F1 over the labels present in the gold answers (as scikit-learn with labels=present)."""
    present = [label for label in labels if label in set(gold)]
    scores = per_class(gold, predicted, present)
    return sum(s["f1"] for s in scores.values()) / len(present) if present else 0.0


def evaluate(rows: Sequence[dict], predicted: dict[str, str], labels: Sequence[str]) -> dict[str, float]:
    """Quality metrics over the rows that have a prediction, named for MLflow.

    Keys: accuracy, macro_f1, bucket_<b>_accuracy, bucket_<b>_macro_f1, class_<l>_{precision,recall,f1}.
    """
    scored = [row for row in rows if row["id"] in predicted]
    gold = [row["label"] for row in scored]
    guess = [predicted[row["id"]] for row in scored]
    metrics = {ACCURACY: accuracy(gold, guess), MACRO_F1: macro_f1(gold, guess, labels)}
    for bucket in sorted({row["bucket"] for row in scored}):
        in_bucket = [(g, p) for g, p, row in zip(gold, guess, scored) if row["bucket"] == bucket]
        bucket_gold = [g for g, _ in in_bucket]
        bucket_guess = [p for _, p in in_bucket]
        metrics[f"bucket_{bucket}_accuracy"] = accuracy(bucket_gold, bucket_guess)
        metrics[f"bucket_{bucket}_macro_f1"] = macro_f1(bucket_gold, bucket_guess, labels)
    for label, score in per_class(gold, guess, labels).items():
        for key in ("precision", "recall", "f1"):
            metrics[f"class_{label}_{key}"] = score[key]
    return metrics


def majority_baseline(train_labels: Sequence[str], gold: Sequence[str], labels: Sequence[str]) -> dict[str, float]:
    """Accuracy and macro-F1 of always predicting the most frequent training label."""
    majority = max(sorted(set(train_labels)), key=list(train_labels).count)
    guess = [majority] * len(gold)
    return {"label": majority, ACCURACY: accuracy(gold, guess), MACRO_F1: macro_f1(gold, guess, labels)}
