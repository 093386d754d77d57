"""Evidence: what is known about a kernel version, in one JSON document (docs/architecture.md).

The package's face: loaders turn a saved ncu report, its raw-page CSV or an evidence JSON into
`Evidence`; `build_evidence` adds the source's static features and the ptxas resource report.
"""

from skillbase.cuda.ptxas import parse_ptxas
from skillbase.evidence.build import build_evidence, load_any, load_evidence_json, ptxas_for_source
from skillbase.evidence.model import Evidence, KernelRecord, focus_static_kernel
from skillbase.evidence.ncu_csv import load_ncu_csv
from skillbase.evidence.ncu_rep import load_ncu_report
from skillbase.evidence.static import static_features

__all__ = ["Evidence", "KernelRecord", "build_evidence", "load_any", "load_evidence_json", "load_ncu_csv",
           "load_ncu_report", "parse_ptxas", "static_features", "ptxas_for_source", "focus_static_kernel"]
