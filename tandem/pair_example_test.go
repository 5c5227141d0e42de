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

// Adding a device by pairing (§6.3): the phone shows a QR code, the laptop
// scans it and posts a request, both show a six-digit code, and the phone
// approves when they match. In an app the two sides run on two machines;
// here they take turns, over an in-memory hub.
func ExampleDevice_AddDevice() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "tandem-example-")
	defer os.RemoveAll(tmp)
	srv := memhub.NewServer()
	store := srv.Connect

	phone, err := tandem.Open(ctx, filepath.Join(tmp, "phone"), tandem.Options{Name: "Jesper", Store: store})
	if err != nil {
		log.Fatal(err)
	}
	defer phone.Close()
	list, _ := phone.NewCollection("Groceries")
	phone.NewRecord(list, map[string][]byte{"title": []byte("Milk")})
	phone.Sync(ctx)

	// Phone: "Add a device" shows offer.Payload() as a QR code.
	offer, err := phone.AddDevice(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer offer.Close(ctx)

	// Laptop: scans the code and asks to be added.
	join, err := tandem.JoinDevice(ctx, filepath.Join(tmp, "laptop"), offer.Payload(), tandem.Options{Name: "Jesper's laptop", Store: store})
	if err != nil {
		log.Fatal(err)
	}
	defer join.Close(ctx)

	// Phone: the request arrives, answered with a challenge.
	req, err := offer.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// Laptop: shows its code once the challenge's signature checks.
	code, err := join.Code(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// Phone: "Add 'Jesper's laptop'? Code …" — the user compares and adds.
	fmt.Printf("Add %q? codes match: %v\n", req.Name(), code == req.Code())
	if err := req.Approve(ctx); err != nil {
		log.Fatal(err)
	}

	// Laptop: receives the identity and syncs.
	laptop, err := join.Device(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer laptop.Close()
	laptop.Sync(ctx)
	recs, _ := laptop.Records(list)
	fmt.Println(laptop.UserID() == phone.UserID(), recs[0].Get("title"))
	// Output:
	// Add "Jesper's laptop"? codes match: true
	// true Milk
}
