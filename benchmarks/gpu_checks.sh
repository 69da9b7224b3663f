#!/bin/bash
# The checks that only an accelerator can answer, in one call: what changed
# since the last GPU run (77a373a, benchmarks/RESULTS.md) in code that also runs
# there, each step under a time limit that leaves the next ones their turn.
#
#   benchmarks/gpu_checks.sh OUTDIR [SCALE]
#
# SCALE (default 1) divides every draw count: SCALE=1000 runs the same steps
# small, as a dry run on a CPU. Each step writes its JSON to OUTDIR and its
# output to OUTDIR/steps.log (six files: the device returns at most eight); the
# last step prints each bound beside the stored row of the same audit.
#
# 1. Default audits at 1e8 of svt2 (its scorers trained on distinct outputs, its
#    sampler's threshold draws), laplace-parallel and report-noisy-max4 (the bit
#    scorer's -0.0 block): the same bounds and choices as
#    results/floor_h200_1e8_77a373a.json?
# 2. snapping's default at 1e7 (its two zeros keyed apart: which candidate wins
#    there, and its bound against results/suite_records_1e7_after.json's CPU row).
# 3. bench_keys.py: the zeros' correction of the compiled keys, with and without
#    signed zeros.
# 4. bench_selection_keys.py at 1e8 on svt1, svt6, truncated-geometric: the
#    outputs keyed once for every candidate, against each keying them itself.
#
# The steps' limits add up to 530 s, inside one call of the device (600 s). The
# tests need a call of their own; timeout's SIGINT lets pytest print its summary:
#   timeout -s INT 500 python3 -m pytest -n 16 -p no:benchmark -q tests README.md
set -u
out=$1; scale=${2:-1}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p "$out"
n() { python3 -c "print(max(1000, int(float('$1') / $scale)))"; }
step() {  # step NAME SECONDS COMMAND...: its output to OUTDIR/steps.log
  local name=$1 limit=$2; shift 2
  local start=$(date +%s)
  echo "== $name" >> "$out/steps.log"
  timeout -s INT "$limit" "$@" >> "$out/steps.log" 2>&1
  echo "$name: rc $? after $(( $(date +%s) - start )) s"
}
step audits 200 python3 benchmarks/bench_floor.py --part audit --draws "$(n 1e8)" \
  --warmup-draws "$(n 1e7)" --cases svt2,laplace-parallel,report-noisy-max4 \
  --json "$out/audits.json"
step snapping 90 python3 benchmarks/suite_records.py --draws "$(n 1e7)" \
  --cases snapping --json "$out/snapping.json"
step keys 60 python3 benchmarks/bench_keys.py --rows "$(n 4194304)" \
  --json "$out/keys.json"
step keys_zeros 60 python3 benchmarks/bench_keys.py --rows "$(n 4194304)" \
  --signed-zeros --json "$out/keys_zeros.json"
step selection_keys 120 python3 benchmarks/bench_selection_keys.py \
  --draws "$(n 1e8)" --repeats 4 --json "$out/selection_keys.json"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
here = "benchmarks/results"
def rows(path):
    try:
        return {r["case"]: r for r in json.load(open(path))["results"]}
    except (OSError, ValueError, KeyError):
        return {}
stored = rows(f"{here}/floor_h200_1e8_77a373a.json")
for case, r in rows(f"{out}/audits.json").items():
    s = stored.get(case, {})
    print(f"{case}: {r.get('attack')} {r.get('epsilon_lower')} in {r.get('audit_seconds')} s"
          f" (prep {r.get('prep_seconds')}); stored H200: {s.get('attack')}"
          f" {s.get('epsilon_lower')}; same: {r.get('epsilon_lower') == s.get('epsilon_lower')}")
try:
    new = json.load(open(f"{out}/snapping.json"))["records"]["snapping"]
    cpu = json.load(open(f"{here}/suite_records_1e7_after.json"))["records"]["snapping"]
    print(f"snapping: {new.get('attack')} {new.get('bound')}; "
          f"CPU: {cpu.get('attack')} {cpu.get('bound')}")
except (OSError, ValueError, KeyError) as e:
    print(f"snapping: no comparison ({e!r})")
PY
