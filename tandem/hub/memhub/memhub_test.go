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

// TestCursorOfAnotherServer: a cursor of another memhub server is a full
// resync from nothing, with Reset, as in the real bindings.
func TestCursorOfAnotherServer(t *testing.T) {
	a, b := memhub.NewServer(), memhub.NewServer()
	sa, sb := a.Open(), b.Open()
	ctx := t.Context()
	sa.EnsureFolder(ctx)
	sb.EnsureFolder(ctx)
	if _, err := sa.Append(ctx, hubtest.Channel(1), hubtest.Envelope(80)); err != nil {
		t.Fatal(err)
	}
	idB, err := sb.Append(ctx, hubtest.Channel(2), hubtest.Envelope(80))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := sa.Changes(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := sb.Changes(ctx, ca.Cursor)
	if err != nil || !cb.Reset || len(cb.Added) != 1 || cb.Added[0].ID != idB {
		t.Fatalf("server B with server A's cursor: %+v, %v", cb, err)
	}
}
