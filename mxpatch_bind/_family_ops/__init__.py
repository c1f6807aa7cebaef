"""The family's own C++ operators as NumPy ``CustomOp`` drop-ins (private package; import them
from :mod:`mxpatch_bind.compat`).

mx-maskrcnn's ``ROIAlign`` and SNIPER's ``MultiProposal``, ``MultiProposalTarget``,
``MultiProposalTargetMask`` and ``MaskRcnnTarget`` were compiled into each repository's own
MXNet. Each module here holds one operator: its computation in NumPy, with the semantics read
from that build's C++/CUDA (facts, not code), and the ``CustomOp`` that runs it on the CPU.
"""

from ._arguments import OperatorArgumentError
from .mask_target import MaskRcnnTarget
from .multi_proposal import MultiProposal
from .proposal_target import MultiProposalTarget
from .proposal_target_mask import MultiProposalTargetMask
from .roi_align import ROIAlign

__all__ = ["ROIAlign", "MultiProposal", "MultiProposalTarget", "MultiProposalTargetMask",
           "MaskRcnnTarget", "OperatorArgumentError"]
# What compat exports from here: the operators by the names the family calls, and the error.
FAMILY_OPERATORS = list(__all__)
