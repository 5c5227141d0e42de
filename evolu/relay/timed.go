package relay

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// timedStorage is the relay's storage with the latency of each call in
// evolu_relay_storage_seconds{op}.
type timedStorage struct {
	protocol.RelayStorage
	h *prometheus.HistogramVec
}

func (t timedStorage) since(op string, start time.Time) {
	t.h.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

func (t timedStorage) Size(ctx context.Context, o protocol.OwnerID) (int, error) {
	defer t.since("size", time.Now())
	return t.RelayStorage.Size(ctx, o)
}

func (t timedStorage) Fingerprint(ctx context.Context, o protocol.OwnerID, begin, end int) (protocol.Fingerprint, error) {
	defer t.since("fingerprint", time.Now())
	return t.RelayStorage.Fingerprint(ctx, o, begin, end)
}

func (t timedStorage) FingerprintRanges(ctx context.Context, o protocol.OwnerID, buckets []int, ub protocol.UpperBound) ([]protocol.Range, error) {
	defer t.since("fingerprint_ranges", time.Now())
	return t.RelayStorage.FingerprintRanges(ctx, o, buckets, ub)
}

func (t timedStorage) FindLowerBound(ctx context.Context, o protocol.OwnerID, begin, end int, ub protocol.UpperBound) (int, error) {
	defer t.since("find_lower_bound", time.Now())
	return t.RelayStorage.FindLowerBound(ctx, o, begin, end, ub)
}

func (t timedStorage) Iterate(ctx context.Context, o protocol.OwnerID, begin, end int, fn func(protocol.TimestampBytes, int) bool) error {
	defer t.since("iterate", time.Now())
	return t.RelayStorage.Iterate(ctx, o, begin, end, fn)
}

func (t timedStorage) ReadChange(ctx context.Context, o protocol.OwnerID, ts protocol.TimestampBytes) ([]byte, error) {
	defer t.since("read_change", time.Now())
	return t.RelayStorage.ReadChange(ctx, o, ts)
}

func (t timedStorage) WriteMessages(ctx context.Context, o protocol.OwnerID, msgs []protocol.EncryptedMessage) error {
	defer t.since("write", time.Now())
	return t.RelayStorage.WriteMessages(ctx, o, msgs)
}

func (t timedStorage) ValidateWriteKey(ctx context.Context, o protocol.OwnerID, key protocol.WriteKey) (bool, error) {
	defer t.since("validate_write_key", time.Now())
	return t.RelayStorage.ValidateWriteKey(ctx, o, key)
}
