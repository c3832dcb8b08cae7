#!/bin/sh
# rtlab in place of cyclictest in a LAVA test definition
# (rtlab-cyclictest.yaml beside this file; docs/lava.md). It measures as
# Linaro's cyclictest test definition does, through rtlab's cyclictest
# command line, and reports the test cases Linaro's rt-tests parser makes of
# cyclictest's output (t<N>-min-latency, t<N>-avg-latency, t<N>-max-latency;
# the max fails at or above MAX_LATENCY) with LAVA's lava-test-case.
#
# It fetches nothing: the one artifact is rtlab itself, a binary per
# architecture in bin/<arch>/rtlab beside this file (aarch64, armv7,
# x86_64). POSIX sh; needs root (FIFO priorities) and, for a background
# command, setsid (util-linux or busybox).
#
# Usage: rtlab-cyclictest.sh [-p priority] [-i interval] [-t threads]
#          [-a affinity] [-D duration] [-m max_latency] [-w background_cmd]
#
# Exit status: 0 when the cases were reported (passed or failed: LAVA has
# the verdicts), otherwise rtlab's status (2 refused, 1 failed, ...) or 1.

set -u

PRIORITY="98"
INTERVAL="1000"
THREADS="1"
AFFINITY="0"
DURATION="1m"
MAX_LATENCY=""
BACKGROUND_CMD=""

say() {
    echo "rtlab-cyclictest: $*" >&2
}

usage() {
    say "usage: $0 [-p priority] [-i interval] [-t threads] [-a affinity]" \
        "[-D duration] [-m max_latency] [-w background_cmd]"
    exit 2
}

while getopts ":p:i:t:a:D:m:w:" opt; do
    case "${opt}" in
        p) PRIORITY="${OPTARG}" ;;
        i) INTERVAL="${OPTARG}" ;;
        t) THREADS="${OPTARG}" ;;
        a) AFFINITY="${OPTARG}" ;;
        D) DURATION="${OPTARG}" ;;
        m) MAX_LATENCY="${OPTARG}" ;;
        w) BACKGROUND_CMD="${OPTARG}" ;;
        *) usage ;;
    esac
done
# Checked before the measurement rather than after it.
case "${MAX_LATENCY}" in
    *[!0-9]* | ??????????????????*)
        say "MAX_LATENCY ${MAX_LATENCY}: not a whole number of us (at most 17 digits)"
        exit 2
        ;;
esac

# The binary for this board, beside this script.
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd) || exit 1
machine=$(uname -m)
case "${machine}" in
    aarch64 | arm64) arch=aarch64 ;;
    armv7* | armv8l) arch=armv7 ;;
    x86_64 | amd64) arch=x86_64 ;;
    *) arch="${machine}" ;;
esac
RTLAB="${here}/bin/${arch}/rtlab"
# An archive or a copy may have lost the executable bit.
if [ -f "${RTLAB}" ] && [ ! -x "${RTLAB}" ]; then
    chmod +x "${RTLAB}"
fi
if [ ! -x "${RTLAB}" ]; then
    say "no ${RTLAB} for this board (${machine}): build it and put it there (docs/lava.md)"
    exit 1
fi

OUTPUT="$(pwd)/output"
RESULT="${OUTPUT}/rtlab.json"
BG_PGID_FILE="${OUTPUT}/background.pgid"
mkdir -p "${OUTPUT}" || exit 1
# A result left by an earlier run must never be reported as this one's.
rm -f "${RESULT}" "${BG_PGID_FILE}"

# The background command: sh -c's argument, never pasted into a script, in
# a session and process group of its own (so that stopping it stops what it
# started), run again a second after it ends, as Linaro's
# background_process_start does, until stopped. It finds this rtlab in
# $RTLAB: BACKGROUND_CMD='"$RTLAB" load ipc --groups 10' is a hackbench
# with nothing to install.
BG_PID=""
start_background() {
    [ -n "${BACKGROUND_CMD}" ] || return 0
    if ! command -v setsid >/dev/null 2>&1; then
        say "BACKGROUND_CMD needs setsid (util-linux or busybox)"
        exit 1
    fi
    say "background: ${BACKGROUND_CMD}"
    # shellcheck disable=SC2016 # $1 and $2 are the inner shell's
    RTLAB="${RTLAB}" setsid sh -c \
        'echo $$ > "$1"; while :; do sh -c "$2" </dev/null >/dev/null; sleep 1; done' \
        rtlab-background "${BG_PGID_FILE}" "${BACKGROUND_CMD}" </dev/null >/dev/null &
    BG_PID=$!
}

# Stops the background command's process group: SIGTERM, then SIGKILL to
# whatever is left after 5 s.
stop_background() {
    [ -n "${BG_PID}" ] || return 0
    n=0
    while [ ! -s "${BG_PGID_FILE}" ] && [ "${n}" -lt 5 ]; do
        sleep 1
        n=$((n + 1))
    done
    pgid=$(cat "${BG_PGID_FILE}" 2>/dev/null)
    case "${pgid}" in
        '' | *[!0-9]*)
            say "the background command's process group is unknown: not stopped"
            BG_PID=""
            return 1
            ;;
    esac
    kill -TERM "-${pgid}" 2>/dev/null
    # Reap the group's leader (our child) so that only live members count.
    wait "${BG_PID}" 2>/dev/null
    n=0
    while kill -0 "-${pgid}" 2>/dev/null && [ "${n}" -lt 5 ]; do
        sleep 1
        n=$((n + 1))
    done
    kill -KILL "-${pgid}" 2>/dev/null
    BG_PID=""
    rm -f "${BG_PGID_FILE}"
    say "background stopped"
}

trap 'stop_background' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# Linaro's THREADS=0: a thread per CPU, on every CPU (`-t -a` alone).
if [ "${THREADS}" = "0" ]; then
    set -- -t -a
elif [ -z "${AFFINITY}" ] || [ "${AFFINITY}" = "all" ]; then
    set -- -t "${THREADS}" -a
else
    set -- -t "${THREADS}" -a "${AFFINITY}"
fi

start_background
say "rtlab cyclictest -q -p ${PRIORITY} -i ${INTERVAL} $* -D ${DURATION} -m"
"${RTLAB}" cyclictest -q -p "${PRIORITY}" -i "${INTERVAL}" "$@" \
    -D "${DURATION}" -m --rtlab-json "${RESULT}"
status=$?
stop_background
if [ "${status}" -ne 0 ]; then
    say "rtlab cyclictest ended with status ${status}: no test cases"
    exit "${status}"
fi

# The test cases, each reported by lava-test-case inside LAVA.
if [ -n "${MAX_LATENCY}" ]; then
    "${RTLAB}" lava "${RESULT}" --max-latency "${MAX_LATENCY}"
else
    "${RTLAB}" lava "${RESULT}"
fi
status=$?
# 6: a case failed, and LAVA has it so: the definition did its work.
[ "${status}" -eq 6 ] && status=0
exit "${status}"
