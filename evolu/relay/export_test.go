package relay

import (
	"context"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// StorageOf is the relay's storage, for tests of package relay_test.
func StorageOf(s *Server) protocol.RelayStorage { return s.store }

// ApplyRequest answers one request without a connection, for the fuzz and
// in-process benchmarks.
func ApplyRequest(ctx context.Context, s *Server, req []byte) ([]byte, error) {
	return s.apply(ctx, nil, req)
}
