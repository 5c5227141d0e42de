package relay

import "github.com/ferry-sync/ferry/evolu/internal/protocol"

// StorageOf is the relay's storage, for tests of package relay_test.
func StorageOf(s *Server) protocol.RelayStorage { return s.store }
