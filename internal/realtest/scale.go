package realtest

import (
	"os"
	"strconv"
	"time"
)

// Slowdown is how much slower than an idle developer machine the tests
// may run: FERRY_TEST_SLOWDOWN (a number ≥ 1). Unset (or unreadable), it
// is 3 under FERRY_REQUIRE_REAL=1, where CI runs the suite on shared cores
// (and once more with a CPU hog on every core, scripts/test), and 1
// otherwise (docs/decisions/ci-loaded-pass.md).
func Slowdown() float64 {
	if v, err := strconv.ParseFloat(os.Getenv("FERRY_TEST_SLOWDOWN"), 64); err == nil && v >= 1 {
		return v
	}
	if Required() {
		return 3
	}
	return 1
}

// Scale stretches a test's deadline d by [Slowdown]. Use it for a bound
// that only says "this should have happened by now" (a context for a
// login and a few commands, a wait for an event): the machine's speed
// must never decide a test. A duration the behaviour itself fixes (a
// timeout under test, a sleep past a clock's second) is not scaled.
func Scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Slowdown())
}
