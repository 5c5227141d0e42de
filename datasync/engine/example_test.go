package engine_test

import (
	"fmt"

	"github.com/ferry-sync/ferry/datasync/engine"
)

// Two KV replicas of one document: what one wrote reaches the other as one
// change, applied once.
func Example() {
	phone, _ := engine.NewKV("phone")
	laptop, _ := engine.NewKV("laptop")
	phone.Set("notes", "title", []byte("Groceries"))

	laptop.Create("notes")
	have, _ := laptop.Version("notes")
	change, _ := phone.Changes("notes", have)
	first, _ := laptop.Import("notes", change)
	again, _ := laptop.Import("notes", change)
	title, _ := laptop.Get("notes", "title")
	fmt.Println(first, "/", again, "/", string(title))
	// Output: applied / already held / Groceries
}
