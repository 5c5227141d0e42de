package hub_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// fieldOrder is a test supersession: write (field f, version v) is
// superseded by (f, v') iff v < v'. A strict partial order.
type fieldOrder struct{}

func w(field, version byte) hub.WriteID { return hub.WriteID{0: field, 1: version} }

func (fieldOrder) Superseded(x, y hub.WriteID) bool { return x[0] == y[0] && x[1] < y[1] }

func msg(id string, writes ...hub.WriteID) hub.GCMessage {
	return hub.GCMessage{ID: hub.ID(id), Record: "r", Writes: writes}
}

func TestDominated(t *testing.T) {
	tests := []struct {
		name string
		msgs []hub.GCMessage
		want []hub.ID
	}{
		{"superseded", []hub.GCMessage{msg("m", w(1, 1)), msg("n", w(1, 2))}, []hub.ID{"m"}},
		{"contained", []hub.GCMessage{msg("m", w(1, 1)), msg("n", w(1, 1), w(2, 1))}, []hub.ID{"m"}},
		{"partly covered", []hub.GCMessage{msg("m", w(1, 1), w(2, 1)), msg("n", w(1, 2))}, nil},
		{"concurrent writes", []hub.GCMessage{msg("m", w(1, 1)), msg("n", w(2, 1))}, nil},
		{"identical: one stays", []hub.GCMessage{msg("b", w(1, 1)), msg("a", w(1, 1))}, []hub.ID{"b"}},
		{"mutual: one stays", []hub.GCMessage{msg("m", w(1, 1), w(1, 2)), msg("n", w(1, 2))}, []hub.ID{"n"}},
		{"other record", []hub.GCMessage{msg("m", w(1, 1)), {ID: "n", Record: "s", Writes: []hub.WriteID{w(1, 2)}}}, nil},
		{"inventory never", []hub.GCMessage{{ID: "m", Kind: hub.InventoryFragment, Record: "r", Writes: []hub.WriteID{w(1, 1)}}, msg("n", w(1, 2))}, nil},
		{"roster never", []hub.GCMessage{{ID: "m", Kind: hub.RosterState, Record: "r", Writes: []hub.WriteID{w(1, 1)}}, {ID: "n", Kind: hub.RosterState, Record: "r", Writes: []hub.WriteID{w(1, 1)}}}, nil},
		{"held never destroyed", []hub.GCMessage{{ID: "m", Record: "r", Held: true, Writes: []hub.WriteID{w(1, 1)}}, msg("n", w(1, 2))}, nil},
		{"held dominates nothing", []hub.GCMessage{msg("m", w(1, 1)), {ID: "n", Record: "r", Held: true, Writes: []hub.WriteID{w(1, 2)}}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := hub.Dominated(tc.msgs, hub.SupersederFunc(fieldOrder{}.Superseded))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Dominated = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDominatedNeverLoses checks on random message sets that every write of
// a destroyed message is in, or superseded by a write in, a message that
// stays, and that protected messages always stay.
func TestDominatedNeverLoses(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 2000 {
		var msgs []hub.GCMessage
		for i := range 2 + r.IntN(7) {
			m := hub.GCMessage{ID: hub.ID(rune('a' + i)), Record: string(rune('r' + r.IntN(2))), Kind: hub.MessageKind(r.IntN(5) / 3 * r.IntN(3))}
			m.Held = r.IntN(6) == 0
			for range 1 + r.IntN(3) {
				m.Writes = append(m.Writes, w(byte(r.IntN(3)), byte(r.IntN(3))))
			}
			msgs = append(msgs, m)
		}
		gone := hub.Dominated(slices.Clone(msgs), fieldOrder{})
		var kept []hub.GCMessage
		for _, m := range msgs {
			if !slices.Contains(gone, m.ID) {
				kept = append(kept, m)
			} else if m.Held || m.Kind != hub.RecordState {
				t.Fatalf("iter %d: destroyed protected message %+v", iter, m)
			}
		}
		for _, m := range msgs {
			if !slices.Contains(gone, m.ID) {
				continue
			}
			for _, x := range m.Writes {
				if !slices.ContainsFunc(kept, func(n hub.GCMessage) bool {
					return n.Record == m.Record && !n.Held && slices.ContainsFunc(n.Writes, func(y hub.WriteID) bool {
						return y == x || (fieldOrder{}).Superseded(x, y)
					})
				}) {
					t.Fatalf("iter %d: destroying %s loses write %v; messages %+v", iter, m.ID, x, msgs)
				}
			}
		}
	}
}
