# Shared by the shell tests (test-launch.sh, test-autoplug.sh), sourced: the tree's folders, a
# temporary folder removed at exit, a GStreamer registry of this run's own (none that an earlier
# build left behind), and the pass/fail counters with ok and bad.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
shared=${VAE_SHARED_DIR:-$src/../shared}
data=${VAE_TEST_DATA:-$src/tests/data}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GST_REGISTRY_1_0=$tmp/registry.bin
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); echo "FAIL: $1"; }
