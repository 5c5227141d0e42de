package devstore

import (
	"bytes"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// signedWrites signs n assigns of different records in scope.
func signedWrites(t *testing.T, scope [16]byte, n int) []*record.Write {
	t.Helper()
	return signedWritesN(t, scope, n)
}

func signedWritesN(t testing.TB, scope [16]byte, n int) []*record.Write {
	st := record.NewState(record.NewValidator(record.Rules{Scope: scope}))
	wr := &record.Writer{Key: suite.NewIdentity([32]byte{1}).SignKey, Device: suite.DeviceID{4}, Clock: record.NewClock(suite.HLC{}, nil), Ref: [32]byte{5}}
	var ws []*record.Write
	for i := range n {
		w, _, err := st.Build(wr, record.Change{Record: [16]byte{byte(i), byte(i >> 8), byte(i >> 16)}, Field: "title", Op: suite.OpAssign, Value: []byte{byte(i)}})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	return ws
}

// Every committed write comes back once with its bytes, and a write listed
// twice in one commit, or stored again later, is still one row.
func TestCommitWritesOnce(t *testing.T) {
	scope := [16]byte{7}
	for _, n := range []int{1, 31, 70} {
		db := openTest(t)
		ws := signedWrites(t, scope, n)
		twice := append(append([]*record.Write{ws[0]}, ws...), ws[n-1])
		if err := db.Commit(&client.Delta{Writes: twice}); err != nil {
			t.Fatal(err)
		}
		if err := db.Commit(&client.Delta{Writes: ws[:min(n, 3)]}); err != nil {
			t.Fatal(err)
		}
		got := map[[32]byte][]byte{}
		if err := db.Source().Writes(t.Context(), scope, func(b []byte, id [32]byte) error {
			if got[id] != nil {
				t.Errorf("write %x read twice", id[:4])
			}
			got[id] = bytes.Clone(b)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("%d writes: read back %d", n, len(got))
		}
		for _, w := range ws {
			if want := record.AppendStored(nil, w); !bytes.Equal(got[w.ID()], want) {
				t.Fatalf("%d writes: write %x read back changed", n, w.ID())
			}
		}
		var rows int
		if err := db.db.QueryRow("SELECT count(*) FROM writes").Scan(&rows); err != nil || rows != n {
			t.Fatalf("%d writes: %d rows (%v)", n, rows, err)
		}
	}
}
