package tandem_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/ferry-sync/ferry/tandem"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

// Two devices of one user keep a list in sync through a hub; here an
// in-memory one (package memhub) stands in for a mail account.
func Example() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "tandem-example-")
	defer os.RemoveAll(tmp)
	srv := memhub.NewServer()
	opts := tandem.Options{Name: "Jesper", Store: srv.Connect}

	phone, err := tandem.Open(ctx, filepath.Join(tmp, "phone"), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer phone.Close()
	list, _ := phone.NewCollection("Groceries")
	milk, _ := phone.NewRecord(list, map[string][]byte{"title": []byte("Milk")})
	phone.AddElement(list, milk, "tags", []byte("dairy"))
	phone.Sync(ctx)

	// The laptop is the same user, set up from the backup key.
	laptop, err := tandem.Restore(ctx, filepath.Join(tmp, "laptop"), phone.ShowBackupKey(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer laptop.Close()
	laptop.Sync(ctx)
	rec, _ := laptop.Record(list, milk)
	fmt.Println(rec.Get("title"), string(rec.Fields["tags"].Elements[0]), "by", rec.Fields["title"].Values[0].Author.Name)
	// Output: Milk dairy by Jesper
}

// Concurrent edits of one field are kept side by side: a conflict the app
// shows, until a later write that saw both settles it.
func ExampleField_Conflict() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "tandem-example-")
	defer os.RemoveAll(tmp)
	srv := memhub.NewServer()
	opts := tandem.Options{Name: "Jesper", Store: srv.Connect}
	a, _ := tandem.Open(ctx, filepath.Join(tmp, "a"), opts)
	defer a.Close()
	list, _ := a.NewCollection("Groceries")
	milk, _ := a.NewRecord(list, map[string][]byte{"qty": []byte("1")})
	a.Sync(ctx)
	b, _ := tandem.Restore(ctx, filepath.Join(tmp, "b"), a.ShowBackupKey(), opts)
	defer b.Close()
	b.Sync(ctx)

	a.SetString(list, milk, "qty", "2") // both edit offline
	b.SetString(list, milk, "qty", "3")
	a.Sync(ctx)
	b.Sync(ctx)
	a.Sync(ctx)

	rec, _ := a.Record(list, milk)
	f := rec.Fields["qty"]
	fmt.Println(f.Conflict(), f.Strings())
	a.SetString(list, milk, "qty", "5") // saw both: settles the field
	rec, _ = a.Record(list, milk)
	fmt.Println(rec.Fields["qty"].Conflict(), rec.Get("qty"))
	// Output:
	// true [2 3]
	// false 5
}

// Sync reports an unreachable hub as CodeOffline: local work goes on.
func ExampleDevice_Sync() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "tandem-example-")
	defer os.RemoveAll(tmp)
	d, _ := tandem.Open(ctx, filepath.Join(tmp, "dev"), tandem.Options{Hub: tandem.IMAPHub("127.0.0.1", 1, "me", "pw")})
	defer d.Close()
	list, _ := d.NewCollection("Offline list")
	d.NewRecord(list, map[string][]byte{"title": []byte("Still works")})
	_, err := d.Sync(ctx)
	fmt.Println(tandem.CodeOf(err) == tandem.CodeOffline, d.Status().Pending)
	// Output: true 4
}
