package lorowasm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCallOverhead is the cost of one Go→wasm call (a trivial export)
// with wazero's deadline watch, which the runtime uses, against the anchor
// without it.
func BenchmarkCallOverhead(b *testing.B) {
	for _, interruptible := range []bool{false, true} {
		b.Run(fmt.Sprintf("deadline=%v", interruptible), func(b *testing.B) {
			ctx := context.Background()
			rt, err := newRuntime(ctx, Config{CacheDir: filepath.Join(os.TempDir(), "ferry-loro-wazero-cache")}, interruptible)
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close(ctx)
			in, err := rt.NewInstance(ctx)
			if err != nil {
				b.Fatal(err)
			}
			d, err := in.NewDoc(ctx, 1)
			if err != nil {
				b.Fatal(err)
			}
			cctx, cancel := rt.Context()
			defer cancel()
			for b.Loop() {
				if _, err := in.Call(cctx, "lorodoc_opCount", uint64(d.ptr)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
