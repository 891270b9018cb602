#!/usr/bin/env bash
# One pass-level test: `tritium opt ARGS FILE | FileCheck FILE`, failing when either fails.
#   check.sh TRITIUM FILECHECK FILE ARGS...
set -euo pipefail
tritium=$1 filecheck=$2 file=$3
shift 3
"$tritium" opt "$@" "$file" | "$filecheck" --dump-input=fail "$file"
