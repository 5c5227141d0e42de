package engine_test

import (
	"strconv"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/engine/enginetest"
)

func TestKVConformance(t *testing.T) {
	enginetest.Run(t, enginetest.Harness{
		New: func(t testing.TB, actor uint64) engine.Engine {
			kv, err := engine.NewKV("actor" + strconv.FormatUint(actor, 10))
			if err != nil {
				t.Fatal(err)
			}
			return kv
		},
		Set: func(e engine.Engine, doc, key, value string) error {
			return e.(*engine.KV).Set(doc, key, []byte(value))
		},
		Get: func(e engine.Engine, doc, key string) (string, bool) {
			v, ok := e.(*engine.KV).Get(doc, key)
			return string(v), ok
		},
	})
}
