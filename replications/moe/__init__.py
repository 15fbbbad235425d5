"""One Mixture-of-Experts layer shared by the MoE papers (EvoMoE, HetuMoE, TA-MoE, FlexMoE, MoESys).

Not a paper package (no paper.yaml): ``gates`` holds every gate with its balance loss and capacity rule,
``layer`` the expert-parallel layer (grouped expert matmuls, all-to-all dispatch/combine), ``dist`` the
differentiable collectives, ``auction`` BASE's balanced assignment, ``schedule`` EvoMoE's temperature.
"""

from replications.moe.gates import GATES, Routing, make_gate
from replications.moe.layer import MoELayer, sync_grads

__all__ = ["GATES", "MoELayer", "Routing", "make_gate", "sync_grads"]
