package memhub_test

import (
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

func TestConformance(t *testing.T) {
	var srv *memhub.Server
	hubtest.Run(t, hubtest.Harness{
		Reset: func(t *testing.T) { srv = memhub.NewServer() },
		Open:  func(t *testing.T) hub.Store { return srv.Open() },
		MoveOut: func(t *testing.T, id hub.ID) func(*testing.T) {
			out, err := srv.Move(id, "Archive")
			if err != nil {
				t.Fatal(err)
			}
			return func(t *testing.T) {
				if _, err := srv.Move(out, hub.Folder); err != nil {
					t.Fatal(err)
				}
			}
		},
		Inject: func(t *testing.T, raw []byte) { srv.Inject(hub.Folder, raw) },
	})
}
