#!/usr/bin/env bash
# Everything the book needs a GPU for, in one run on a lent GPU machine (python3 there has torch with CUDA, numpy,
# scipy, yaml, tqdm and pytest; icllib is read from src/, no install):
#   1. the device tests on CUDA (tests/test_device.py, the tests marked cuda);
#   2. the pre-registered deciding runs (icllib.deciding) not archived yet: the App. B.11 seeds at batch 200, all
#      in one batched loop (five processes of one seed each ran at only ~170 steps a second each on an H200,
#      2026-11-26: the chip time-slices between processes), beside the width-2048 runs of App. E.
# Each run is archived under results/deciding/ as it ends; the folder is packed into $OUT at the end, with the
# logs. Usage: OUT=<folder> ICLLIB_COMMIT=<the commit that holds the rules> tools/device_run.sh [budget_s]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-_build/device}
BUDGET=${1:-540}
mkdir -p "$OUT" /tmp/device-logs
export PYTHONPATH="$PWD/src" PYTHONUNBUFFERED=1 ICLLIB_DEVICE=${ICLLIB_DEVICE:-cuda} ICLLIB_MODE=full
started=$(date +%s)
{ date -u; nvidia-smi; nproc; python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda)"
} > "$OUT/machine.txt" 2>&1

timeout "$BUDGET" python3 -m icllib.deciding run b11-batch200-seeds > /tmp/device-logs/b11-seeds.log 2>&1 &
python3 -m pytest -q -p no:cacheprovider --noconftest tests/test_device.py > "$OUT/tests.log" 2>&1
timeout "$BUDGET" python3 -m icllib.deciding run standard-transformer-2048 > "$OUT/standard.log" 2>&1
echo "standard runs ended after $(( $(date +%s) - started )) s" >> "$OUT/machine.txt"
wait
echo "all runs ended after $(( $(date +%s) - started )) s" >> "$OUT/machine.txt"
for log in /tmp/device-logs/*.log; do echo "== $log"; tr '\r' '\n' < "$log" | awk 'NR % 200 == 0 || /deciding|Error|error/'; done \
  > "$OUT/b11.log"
tar czf "$OUT/deciding.tar.gz" results/deciding 2>/dev/null
ls -la "$OUT"
