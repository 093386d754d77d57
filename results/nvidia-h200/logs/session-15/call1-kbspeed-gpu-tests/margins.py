"""H68's margins: CUPTI vs events vs a CUPTI-free worker on examples/vector_add, per size (argv[1]: the repo)."""
import sys
from pathlib import Path

from skillbase.harness.runtime import Options, evaluate

t = Path(sys.argv[1]) / "examples/vector_add/vector_add.cu"
p = {"target_s": 0.3, "min_samples": 20, "max_samples": 100}
a = evaluate(t, options=Options(verify=False, static=False, time_plan=p))
b = evaluate(t, options=Options(verify=False, static=False, time_plan={**p, "timer": "events"}))
print(a.status, a.reason, b.status, a.peaks)
eo = {x.size: x.kernels["candidate"] for x in b.timings}
print("size timer batch batch_events cold_l2 cupti_med events_med no_cupti_med floor_us suspicious")
for x in a.timings:
    k = x.kernels["candidate"]
    print(x.size, x.timer, k.batch, eo[x.size].batch, k.cold_l2, k.stats.median_us, k.event_stats.median_us,
          eo[x.size].stats.median_us, x.bytes / a.peaks["copy_bytes_per_s"] * 1e6, k.suspicious)
