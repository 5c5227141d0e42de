package loro

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
)

// TestConcurrentUse: the engine is safe for concurrent use (run with
// -race): writers, readers and importers on several documents at once end
// with every write held.
func TestConcurrentUse(t *testing.T) {
	e, o := newEngine(t, 1), newEngine(t, 2)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			doc := fmt.Sprint("doc", w%2)
			for i := range 30 {
				if err := e.Set(doc, fmt.Sprint("w", w, "-", i), tv("v")); err != nil {
					t.Error(err)
					return
				}
				_, _ = e.Version(doc)
				_, _ = e.JSON(doc)
				_ = e.Docs()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 30 {
			if err := o.Set("doc0", fmt.Sprint("o", i), tv("v")); err != nil {
				t.Error(err)
				return
			}
			ch, err := o.Changes("doc0", nil)
			if err != nil {
				t.Error(err)
				return
			}
			if out, err := e.Import("doc0", ch); out != engine.Applied && out != engine.AlreadyHeld {
				t.Errorf("import: %v %v", out, err)
			}
		}
	}()
	wg.Wait()
	if n := len(e.Values("doc0", DefaultCollection)); n != 2*30+30 {
		t.Fatalf("doc0 holds %d keys", n)
	}
	if n := len(e.Values("doc1", DefaultCollection)); n != 2*30 {
		t.Fatalf("doc1 holds %d keys", n)
	}
}
