#!/usr/bin/env bash
# Build Arctic Inference 0.3.0 (the suffix trees vLLM's suffix decoding calls) for the CPU
# torch, and install it into the active environment without its dependencies.
#
# It publishes only a source package whose build requires torch; with pip's build isolation
# that would fetch a multi-GB CUDA torch, so the wheel is built in a throwaway environment
# holding the CPU torch and the build tools, then installed here with --no-deps (its other
# dependencies would replace vLLM's pins). vLLM loads no plugin of it: verispec's vLLM engines
# set VLLM_PLUGINS="" unless you set it.
#
#   bash conformance/build-arctic-inference.sh     # in the environment that has verispec[vllm]
set -euo pipefail
python=${PYTHON:-python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/build"
"$work/build/bin/pip" install -q torch==2.13.0 setuptools wheel ninja cmake nanobind==2.9.2 \
    protobuf==5.29.6 grpcio-tools
# cmake finds the Python on PATH: the build environment's, which has nanobind and torch
PATH="$work/build/bin:$PATH" "$work/build/bin/pip" wheel -q --no-build-isolation --no-deps \
    arctic-inference==0.3.0 -w "$work/wheel"
"$python" -m pip install --no-deps "$work"/wheel/arctic_inference-*.whl
"$python" -c "from arctic_inference.suffix_decoding import SuffixDecodingCache; print('arctic_inference: suffix decoding available')"
