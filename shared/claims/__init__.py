"""Claims are data: a paper's ``claims:`` specs (shared.claims.spec) judged by one library of kinds
(shared.claims.kinds) into ``Verdict``s (shared.claims.judge) that read the same everywhere (shared.claims.display)."""

from shared.claims.judge import Verdict, as_claim, judge_claim, judge_paper, paper_claims
from shared.claims.spec import ClaimSpec, ClaimSpecError, load_claims

__all__ = ["ClaimSpec", "ClaimSpecError", "Verdict", "as_claim", "judge_claim", "judge_paper", "load_claims", "paper_claims"]
