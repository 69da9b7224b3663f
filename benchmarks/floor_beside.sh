#!/bin/bash
# The whole default audit on an accelerator with the NumPy floor beside it:
# bench_floor.py's audits (--part audit) one after another on the accelerator, its
# floors (--part floor, JAX_PLATFORMS=cpu) in six one-core processes at the same time,
# then --merge --ceilings. Each case's audits run once; a case already done at the
# largest N in an earlier call's audit file (same WORK) is skipped, so a second call
# goes on where a first one ran out of time.
#
#   benchmarks/floor_beside.sh WORK OUTDIR TAG SECONDS FLOORS(0|1)
#   DRAWS=1e8,2e8 FLOOR_DRAWS=1e8 WARMUP=1e7 CASES=svt1,svt3 benchmarks/floor_beside.sh ...
#
# WORK keeps the JSON files between calls; OUTDIR gets copies; TAG names this call's
# audit file; SECONDS bounds each process; FLOORS=1 runs the floors too. CASES is in
# the order they run (default: the suite, the cases nearest their ceiling first).
set -u
work=$1; out=$2; tag=$3; budget=$4; floors=$5
draws=${DRAWS:-1e8,2e8}
last=$(python3 -c "print(int(max(float(v) for v in '$draws'.split(','))))")
order=${CASES:-numerical-svt,svt3,svt34-parallel,svt1,svt6,report-noisy-max3,svt2,svt4,report-noisy-max4,svt5,report-noisy-max1,report-noisy-max2,noisy-hist1,noisy-hist2,prefix-sum,laplace-parallel,truncated-geometric,rappor,one-time-rappor,laplace-float,snapping}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p "$work" "$out"
cases=$(python3 - "$work" "$order" "$last" <<'PY'
import glob, json, sys
work, order, last = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
done = set()
for path in glob.glob(f"{work}/audit_*.json"):
    done |= {r["case"] for r in json.load(open(path))["results"] if r["draws"] == last}
print(",".join(c for c in order if c not in done))
PY
)
echo "cases: $cases"
start=$(date +%s)
if [ "$floors" = 1 ]; then
  for g in 0 1 2 3 4 5; do
    sub=$(echo "$order" | tr , '\n' | awk -v g=$g 'NR % 6 == g' | paste -sd,)
    [ -n "$sub" ] || continue
    JAX_PLATFORMS=cpu timeout "$budget" python3 benchmarks/bench_floor.py --part floor \
      --draws "${FLOOR_DRAWS:-1e8}" --cases "$sub" --json "$work/floor$g.json" \
      > "$work/floor$g.log" 2>&1 &
  done
fi
if [ -n "$cases" ]; then
  timeout "$budget" python3 benchmarks/bench_floor.py --part audit --draws "$draws" \
    --warmup-draws "${WARMUP:-100000}" --cases "$cases" --json "$work/audit_$tag.json" > "$work/audit_$tag.log" 2>&1
fi
echo "audits ended after $(( $(date +%s) - start )) s"
wait
echo "floors ended after $(( $(date +%s) - start )) s"
if [ "$floors" = 1 ]; then
  JAX_PLATFORMS=cpu python3 benchmarks/bench_floor.py \
    --merge "$(ls "$work"/floor?.json | paste -sd,)" --json "$work/floors.json" > /dev/null
  cat "$work"/floor?.log > "$work/floors.log"
  cp "$work/floors.json" "$work/floors.log" "$out/"
fi
cp "$work/audit_$tag.json" "$work/audit_$tag.log" "$out/" 2>/dev/null
tail -40 "$work/audit_$tag.log" 2>/dev/null
