package protocol_test

import (
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/vectors"
)

func TestVectorsRBSRMemory(t *testing.T) {
	vectors.ReplayRBSR(t, func(*testing.T) protocol.RelayStorage { return protocol.NewMemoryStorage() })
}
