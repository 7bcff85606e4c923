#!/usr/bin/env bash
# Everything GPU-side in one call: doctor, loader timings, the whole test suite (notebooks included), the
# benchmark and the recorded timing lesson. Results go to results/<date>-<gpu>/ (committed: device, date,
# numbers) and, on the device tool's machine, into $OUT as one tarball.
#
#   bash scripts/gpu_session.sh [doctor] [loader] [tests] [bench] [timing] [debug] [multi] [variants] [class]
#   (no argument: all but multi, variants and class; variants: scripts/experiment_matmul_variants.py into $R; class:
#   scripts/measure_class.py, a class of 30 on this machine, into $R/class.json; its hand-out is git's HEAD, so
#   commit what is to be measured: the device tool's copy of a checkout has the last commit that landed as its HEAD)
#   TESTS="tests/test_elu.py ..." limits the tests step (its log is then pytest-<first file>.log); WORKERS=8 is how many
#   pytest-xdist workers run the tests (where xdist is installed); each step is
#   stopped after STEP_TIMEOUT seconds (default 540) so the results of the others still come back.
#   BENCH_ARGS="--only matmul" (or --quick) is passed to bench/run.py; its log is then bench-<ops>.log.
#   CLASS_ARGS="--no-grade" is passed to scripts/measure_class.py: the students' first calls and edit alone (~1 min).
#
# Uses the machine's own python3 (PY=... to change); Jupyter packages may come as wheels in .whl/, and Debian's mold
# in .whl/bin/ (scripts/gpu_carry.sh gathers both here; the device call carries .whl).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
STEPS=${*:-doctor loader tests bench timing debug}
TESTS=${TESTS:-}
TAG=$(basename "${TESTS%% *}" .py); TAG=${TAG:+-$TAG}; [ -n "${RUN_TAG:-}" ] && TAG=-$RUN_TAG
T="timeout ${STEP_TIMEOUT:-540}"  # TIMEOUT_<step>=N overrides it for one step
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" > /dev/null && [ ! -d /tmp/site/nbclient ]; then  # once per machine: runs may go in parallel
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
[ -d /tmp/site/nbclient ] && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
[ -x /tmp/site/bin/ccache ] && export PATH=/tmp/site/bin:$PATH  # the carried ccache (scripts/gpu_carry.sh)
if [ -x .whl/bin/mold ] && .whl/bin/mold --version > /dev/null 2>&1; then  # carried by scripts/gpu_carry.sh
    mkdir -p /tmp/labkit-bin && ln -sf "$PWD/.whl/bin/mold" /tmp/labkit-bin/mold && ln -sf "$PWD/.whl/bin/mold" /tmp/labkit-bin/ld.mold
    export PATH=/tmp/labkit-bin:$PATH  # gcc's -fuse-ld=mold finds ld.mold on PATH; the loader probes it before use
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
R=$($PY -m kit.results)  # results/<date>-<gpu>/, named as every recorder names it
SLUG=$(basename "$R")
mkdir -p "$R"
echo "== $(date -u +%FT%TZ) $SLUG: $STEPS; TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-unset} CC=${CC:-unset} CXX=${CXX:-unset}"
rc=0
for step in $STEPS; do
    t0=$(date +%s)
    limit=TIMEOUT_$step; T="timeout ${!limit:-${STEP_TIMEOUT:-540}}"
    case $step in
        doctor) { nvidia-smi; $PY -m loader doctor; } > "$R/doctor.txt" 2>&1; tail -n 12 "$R/doctor.txt" ;;
        loader) $T $PY scripts/measure_loader.py > "$R/loader.log" 2>&1 || rc=1; tail -n 20 "$R/loader.log" ;;
        tests)  # in parallel where pytest-xdist is (the H200 machine has it): a worker per group of tests (--dist
                # loadgroup: a file's tests together and in order, but the long files' independent parts apart, as
                # tests/conftest.py's XDIST_SPLIT says), so the whole suite fits one device call; then, alone, the
                # tests that time the GPU (marked exclusive_gpu: other tests' kernels would skew them)
                XDIST=""; $PY -c "import xdist" 2>/dev/null && XDIST="-n ${WORKERS:-8} --dist loadgroup"
                export LABKIT_EXECUTED_NOTEBOOKS=/tmp/executed
                # the notebooks show the committed recordings in results/ (lesson 09's benchmark, ...), which a
                # results folder moved by LABKIT_RESULTS_DIR lacks: pytest runs without it (the logs still go to $R)
                PYTEST="env -u LABKIT_RESULTS_DIR $PY -m pytest"
                # each failure's traceback as it happens (tests/conftest.py): a step stopped at its limit keeps them
                export LABKIT_FAILURE_LOG="$R/failures$TAG.log"; rm -f "$LABKIT_FAILURE_LOG"
                if [ -n "$XDIST" ]; then
                    # -v: each test's result is logged as it ends, so a step stopped at its time limit still
                    # says which tests passed and which were still running
                    $T $PYTEST -v -ra -p no:cacheprovider $XDIST -m "not exclusive_gpu" $TESTS \
                        --junitxml="$R/pytest$TAG.xml" > "$R/pytest$TAG.log" 2>&1; r1=$?
                    # only the files that mark tests exclusive_gpu: collecting all of them again takes seconds
                    ALONE_FILES=${TESTS:-$(grep -l exclusive_gpu tests/test_*.py | tr '\n' ' ')}
                    $T $PYTEST -q -ra -p no:cacheprovider -m exclusive_gpu $ALONE_FILES \
                        --junitxml="$R/pytest$TAG-exclusive.xml" > "$R/pytest$TAG-exclusive.log" 2>&1; r2=$?
                    [ $r1 -eq 124 ] && echo "the parallel tests were stopped at the step's limit: $(grep -c PASSED "$R/pytest$TAG.log") passed, $(grep -c -E '(FAILED|ERROR) ' "$R/pytest$TAG.log") failed by then"
                    [ $r1 -eq 5 ] && r1=0; [ $r2 -eq 5 ] && r2=0; [ $r1 -ne 0 ] || [ $r2 -ne 0 ] && rc=1
                else
                    $T $PYTEST -q -ra -p no:cacheprovider $TESTS --junitxml="$R/pytest$TAG.xml" \
                        > "$R/pytest$TAG.log" 2>&1 || rc=1
                fi
                for log in "$R/pytest$TAG.log" "$R/pytest$TAG-exclusive.log"; do
                    [ -f "$log" ] || continue
                    grep -E "passed|failed|error" "$log" | tail -n 1
                    grep -E "^(FAILED|ERROR)" "$log" | head -n 30
                done ;;
        bench)  # a run with --only writes $R/bench.json too, over a full run's: add --out <folder> to keep both
                BLOG="$R/bench${BENCH_ARGS:+-$(echo "$BENCH_ARGS" | tr -c 'a-z0-9\n' '-' | sed 's/^-*//; s/-*$//')}.log"
                if [ -f bench/run.py ]; then $T $PY bench/run.py ${BENCH_ARGS:-} > "$BLOG" 2>&1 || rc=1; tail -n 40 "$BLOG"; fi ;;
        timing) if [ -f kit/record_timing.py ]; then $T $PY -m kit.record_timing > "$R/timing.log" 2>&1 || rc=1; tail -n 15 "$R/timing.log"; fi ;;
        variants) OUT="$R" $T $PY scripts/experiment_matmul_variants.py > "$R/matmul-variants.log" 2>&1 || rc=1
                tail -n 8 "$R/matmul-variants.log" ;;
        class)  OUT="$R" $T $PY scripts/measure_class.py ${CLASS_ARGS:-} > "$R/class.log" 2>&1 || rc=1  # ~5 min with grading
                grep -v "^\[labkit\]" "$R/class.log" | tail -n 30 ;;
        multi)  $T $PY -m kit.devices > "$R/multi_gpu.log" 2>&1 || rc=1; tail -n 10 "$R/multi_gpu.log" ;;
        debug)  $T $PY -m kit.record_debug > "$R/debug.log" 2>&1 || rc=1; grep -E "^(--|wrote)" "$R/debug.log" | cut -c1-160 ;;
        *) echo "unknown step $step"; rc=2 ;;
    esac
    echo "-- $step: $(( $(date +%s) - t0 )) s"
done
if [ -n "${OUT:-}" ]; then
    tar czf "$OUT/results.tgz" results
    [ -d /tmp/executed ] && tar czf "$OUT/executed_notebooks.tgz" -C /tmp executed
fi
exit $rc
