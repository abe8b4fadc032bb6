#!/usr/bin/env bash
# Generates the Python stubs from proto/ with protoc and its grpc plugin (Debian packages
# protobuf-compiler and protobuf-compiler-grpc), then runs the examples with Debian's python3,
# which has python3-grpcio, python3-protobuf and python3-msgpack: client.py (the unary calls)
# and group_member.py (a member of a consumer group). Exits non-zero when one fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
python="${PYTHON:-/usr/bin/python3}"
plugin="${GRPC_PYTHON_PLUGIN:-$(command -v grpc_python_plugin || true)}"
if ! command -v protoc >/dev/null || [ -z "$plugin" ]; then
  echo "protoc or grpc_python_plugin missing: apt-get install -y protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-protobuf python3-msgpack" >&2
  exit 1
fi

rm -rf "$here/gen"
mkdir -p "$here/gen"
protoc -I "$repo/proto" \
  --python_out="$here/gen" \
  --grpc_out="$here/gen" --plugin=protoc-gen-grpc="$plugin" \
  "$repo"/proto/shameless/v1/*.proto
export PYTHONPATH="$here/gen"
"$python" "$here/client.py"
"$python" "$here/group_member.py"
