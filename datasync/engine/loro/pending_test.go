package loro

import (
	"fmt"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
)

// TestPendingIsBounded: changes held behind a missing predecessor are
// bounded by MaxPending; past it a change is answered MissingPredecessor
// without being imported (Loro would hold it in memory without bound), and
// once the predecessor arrives the held ones apply and the refused ones
// import when they come again.
func TestPendingIsBounded(t *testing.T) {
	a, b := newEngine(t, 1), newEngine(t, 2)
	check(t, a.Create("d"))
	var changes [][]byte
	for i := range MaxPending + 6 {
		before := []byte{}
		if b.Has("d") {
			before = must[[]byte](t)(b.Version("d"))
		}
		check(t, b.Set("d", fmt.Sprint("k", i), tv(fmt.Sprint(i))))
		changes = append(changes, must[[]byte](t)(b.Changes("d", before)))
	}
	for i, ch := range changes[1:] {
		if out, err := a.Import("d", ch); out != engine.MissingPredecessor {
			t.Fatalf("change %d without its predecessor: %v %v", i+1, out, err)
		}
	}
	a.mu.Lock()
	held := a.docs["d"].pending
	a.mu.Unlock()
	if held != MaxPending {
		t.Fatalf("%d changes held pending, want %d", held, MaxPending)
	}
	if out, err := a.Import("d", changes[0]); out != engine.Applied {
		t.Fatalf("the predecessor: %v %v", out, err)
	}
	if v, ok := a.Get("d", fmt.Sprint("k", MaxPending)); !ok || v.Text != fmt.Sprint(MaxPending) {
		t.Fatal("held changes did not apply once their predecessor arrived")
	}
	if _, ok := a.Get("d", fmt.Sprint("k", MaxPending+1)); ok {
		t.Fatal("a change refused past the bound was imported anyway")
	}
	for _, ch := range changes[MaxPending+1:] {
		if out, err := a.Import("d", ch); out != engine.Applied {
			t.Fatalf("refused change sent again: %v %v", out, err)
		}
	}
	if got, want := must[[]byte](t)(a.JSON("d")), must[[]byte](t)(b.JSON("d")); string(got) != string(want) {
		t.Fatalf("not converged: %s vs %s", got, want)
	}
	a.mu.Lock()
	held = a.docs["d"].pending
	a.mu.Unlock()
	if held != 0 {
		t.Fatalf("%d still counted pending", held)
	}
}
