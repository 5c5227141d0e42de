package protocol

// Reconciliation constants (Number.ts computeBalancedBuckets defaults).
const (
	numberOfBuckets         = 16
	minItemsPerBucket       = 2
	minItemsForFingerprints = numberOfBuckets * minItemsPerBucket
)

// balancedBuckets splits n items into 16 buckets whose sizes differ by at
// most one, larger ones first, and returns the cumulative end index of each.
// It reports false when n < 32: such a range is listed as timestamps.
func balancedBuckets(n int) ([]int, bool) {
	if n < minItemsForFingerprints {
		return nil, false
	}
	per, extra := n/numberOfBuckets, n%numberOfBuckets
	out := make([]int, numberOfBuckets)
	at := 0
	for i := range out {
		at += per
		if i < extra {
			at++
		}
		out[i] = at
	}
	return out, true
}
