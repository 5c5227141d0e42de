package relay

import (
	"context"
	"errors"

	"github.com/ferry-sync/ferry/evolu/protocol"
)

// fanout carries broadcasts to the other relay processes of a shared
// database.
type fanout struct{}

func startFanout(ctx context.Context, s *Server) (*fanout, error) {
	return nil, errors.New("relay: postgres not yet supported")
}

func (f *fanout) publish(ctx context.Context, o protocol.OwnerID, msg []byte) {}

func (f *fanout) stop() {}
