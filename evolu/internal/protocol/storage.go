package protocol

import "context"

// Storage is the replica storage reconciliation reads, and the relay and
// client write (Storage.ts Storage). Indexes address an owner's timestamps
// in ascending byte order, from 0 to Size.
type Storage interface {
	// Size is the number of the owner's timestamps.
	Size(ctx context.Context, owner OwnerID) (int, error)
	// Fingerprint is the XOR of the fingerprints of timestamps [begin, end);
	// zero for an empty range.
	Fingerprint(ctx context.Context, owner OwnerID, begin, end int) (Fingerprint, error)
	// FingerprintRanges returns one Fingerprint range per bucket: bucket i
	// covers indexes [buckets[i-1], buckets[i]) (buckets[-1] = 0) and is
	// bounded by the timestamp at index buckets[i]; the last one is bounded
	// by ub.
	FingerprintRanges(ctx context.Context, owner OwnerID, buckets []int, ub UpperBound) ([]Range, error)
	// FindLowerBound returns the index of the first timestamp >= ub, or end
	// when there is none, ub is infinite, or the range is empty.
	FindLowerBound(ctx context.Context, owner OwnerID, begin, end int, ub UpperBound) (int, error)
	// Iterate calls fn for the timestamps [begin, end) in order until fn
	// returns false.
	Iterate(ctx context.Context, owner OwnerID, begin, end int, fn func(t TimestampBytes, index int) bool) error
	// ReadChange returns the stored EncryptedDbChange of t.
	ReadChange(ctx context.Context, owner OwnerID, t TimestampBytes) ([]byte, error)
	// WriteMessages stores the messages it does not have yet, all or none.
	// A *QuotaExceededError means none were stored because of quota.
	WriteMessages(ctx context.Context, owner OwnerID, msgs []EncryptedMessage) error
}

// RelayStorage is the Storage of a relay, which also keeps write keys.
type RelayStorage interface {
	Storage
	// ValidateWriteKey stores key as the owner's write key if it has none
	// and reports whether key equals the owner's key, compared in constant
	// time.
	ValidateWriteKey(ctx context.Context, owner OwnerID, key WriteKey) (bool, error)
}
