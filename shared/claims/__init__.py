"""Claims are data: a paper's ``claims:`` specs (shared.claims.spec) judged by one library of kinds
(shared.claims.kinds) into ``Verdict``s (shared.claims.judge) that read the same everywhere (shared.claims.display)."""

from shared.claims.judge import Verdict, judge_claim, judge_paper
from shared.claims.spec import ClaimSpec, ClaimSpecError, load_claims

__all__ = ["ClaimSpec", "ClaimSpecError", "Verdict", "judge_claim", "judge_paper", "load_claims"]
