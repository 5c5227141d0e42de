package loro

import (
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/engine/enginetest"
)

// TestConformance runs the engine contract suite the KV engine passes.
func TestConformance(t *testing.T) {
	enginetest.Run(t, enginetest.Harness{
		New: func(t testing.TB, actor uint64) engine.Engine { return newEngine(t, actor) },
		Set: func(e engine.Engine, doc, key, value string) error {
			return e.(*Engine).Set(doc, key, Value{Kind: Text, Text: value})
		},
		Get: func(e engine.Engine, doc, key string) (string, bool) {
			v, ok := e.(*Engine).Get(doc, key)
			return v.Text, ok && v.Kind == Text
		},
	})
}
