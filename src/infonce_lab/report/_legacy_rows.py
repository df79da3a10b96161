"""LEGACY: the old sections' rows (sims.py, tails.py, text.py) as claim rows of the verdict
contract, until each section module replaces them; deleted with report/_legacy.py."""

from __future__ import annotations

from typing import Any

from infonce_lab.report.verdicts import Case, ClaimRow, Outcome, Verdict

SELF_CHECKS = ("closed-form barrier", "from the watershed", "= finite differences")


def legacy_verdict(text: str) -> Verdict:
    for outcome in (Outcome.NOT_REPRODUCED, Outcome.REPRODUCED, Outcome.NOT_RUN,
                    Outcome.INCONCLUSIVE):
        if text.startswith(outcome):
            why = text[len(outcome):].strip(" :()")
            return Verdict(outcome, why)
    return Verdict(Outcome.INCONCLUSIVE, text)


def sims_rows(rows: list[dict[str, Any]]) -> list[ClaimRow]:
    out: list[ClaimRow] = []
    for r in rows:
        if r["kind"] == "claim":
            out.append(ClaimRow(r["paper"], r["experiment"], r["claim"], "", r["prediction"],
                                r["ours"], legacy_verdict(r["verdict"]),
                                self_check=any(k in r["claim"] for k in SELF_CHECKS)))
        else:
            out[-1].cases.append(Case(r["case"], r["ours"], legacy_verdict(r["verdict"])))
    return out


def tails_rows(rows: list[dict[str, Any]]) -> list[ClaimRow]:
    out: list[ClaimRow] = []
    for r in rows:
        if r["claim"].startswith("Noise floor"):  # decided by sections/weince_theory.py
            continue
        if r["group"] == "all":
            out.append(ClaimRow("weince", "Tail diagnostics", r["claim"], "", r["paper"],
                                r["ours"], legacy_verdict(r["verdict"])))
        else:
            out[-1].cases.append(Case(r["group"], r["ours"], legacy_verdict(r["verdict"])))
    return out


def text_rows(claims: list[dict[str, Any]]) -> list[ClaimRow]:
    return [ClaimRow("weince", "Sentence embeddings (SimCSE)", c["claim"], "", c["paper"],
                     c["ours"], legacy_verdict(c["verdict"])) for c in claims
            if c["verdict"] != "context"]
