#!/usr/bin/env bash
# Runs every fuzz target for SECONDS seconds each (default 60; `fuzz/run.sh 300` for five
# minutes) under a memory cap, so an input that costs more memory than the project states fails
# the run (libFuzzer reports "out-of-memory (malloc(N))" or "out-of-memory (used: NMb; exceeds:
# NMb)" and leaves the input in fuzz/artifacts/<target>/).
#
# The cap, from the stated memory factors (bytes of memory per byte of input):
#   hostlist::expand           48   (the largest factor in the project)
#   HostList::parse            22
#   decode_cluster_def          8
#   ClusterSpec::from_json      8
# Inputs are at most MAX_LEN = 1 MiB (-max_len=1048576), so a parser within its factor holds
# at most 48 x 1 MiB = 48 MiB for one input.
#   -malloc_limit_mb=64  : any single allocation above 64 MiB (48 MiB + a third of headroom)
#                          fails the run at once, with the stack of that malloc.
#   -rss_limit_mb=160    : the process's total RSS may not exceed 160 MiB = the fuzzer's own
#                          baseline (measured 60-90 MB over a run: libFuzzer, the ASan shadow
#                          and allocator, the corpus in memory) + the 64 MiB above, rounded up.
#                          libFuzzer checks RSS every second and after each input.
#   ASAN_OPTIONS=quarantine_size_mb=8 : AddressSanitizer keeps freed memory in a quarantine
#                          (256 MiB by default) to catch use-after-free; that memory counts in
#                          RSS, so with the default the run fails after ~20 s on a trivial input
#                          (measured: 25 MB live, 123 MB quarantined). 8 MiB keeps RSS honest.
# A parser that keeps to its factor stays far below both; one whose memory grows faster than
# its input (quadratic, or a range like n[1-4294967295] that allocates before checking a
# limit) trips them.
#
# Each target's corpus lives in fuzz/corpus/<target>/ (committed seeds have readable names;
# inputs libFuzzer adds are named by SHA-1 and ignored by git). Needs `cargo install
# cargo-fuzz` and a nightly toolchain.
set -euo pipefail

SECONDS_PER_TARGET="${1:-60}"
MAX_LEN=1048576 # 1 MiB
MALLOC_LIMIT_MB=64
RSS_LIMIT_MB=160
export ASAN_OPTIONS="quarantine_size_mb=8${ASAN_OPTIONS:+:${ASAN_OPTIONS}}"

cd "$(dirname "$0")"

TARGETS=(
    cluster_json
    cluster_def
    tf_config
    hostlist
    tasks_per_node
    device_name
    filter_json
    sm_hosts
    gpu_list
)
if [[ $# -gt 1 ]]; then
    TARGETS=("${@:2}") # fuzz/run.sh 60 hostlist gpu_list: only those targets
fi

for target in "${TARGETS[@]}"; do
    echo "=== ${target}: ${SECONDS_PER_TARGET}s, max_len=${MAX_LEN}, malloc_limit_mb=${MALLOC_LIMIT_MB}, rss_limit_mb=${RSS_LIMIT_MB}"
    mkdir -p "corpus/${target}"
    cargo +nightly fuzz run "${target}" "corpus/${target}" -- \
        -max_len="${MAX_LEN}" \
        -max_total_time="${SECONDS_PER_TARGET}" \
        -rss_limit_mb="${RSS_LIMIT_MB}" \
        -malloc_limit_mb="${MALLOC_LIMIT_MB}"
done
