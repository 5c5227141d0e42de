package loro_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ferry-sync/ferry/datasync/engine/loro"
)

// Two replicas of one document: one writes, the other catches up from its
// version, as the exchange does with a delta.
func Example() {
	ctx := context.Background()
	rt, err := loro.NewRuntime(ctx, loro.RuntimeConfig{CacheDir: filepath.Join(os.TempDir(), "ferry-loro-wazero-cache")})
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)
	a, _ := loro.New(ctx, rt, loro.Options{Peer: 1})
	b, _ := loro.New(ctx, rt, loro.Options{Peer: 2})

	_ = a.Set("notes", "title", loro.Value{Kind: loro.Text, Text: "groceries"})
	_ = a.Set("notes", "count", loro.Value{Kind: loro.Int, Int: 3})
	_ = b.Create("notes")

	have, _ := b.Version("notes")
	change, _ := a.Changes("notes", have)
	out, _ := b.Import("notes", change)
	doc, _ := b.JSON("notes")
	fmt.Println(out)
	fmt.Println(string(doc))
	// Output:
	// applied
	// {"data":{"count":3,"title":"groceries"}}
}
