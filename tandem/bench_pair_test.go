package tandem

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkPairing: the whole of "Add a device" on a real server (§6.3,
// §13.2) — AddDevice, the request, the challenge, both codes, the
// approval, the reply, installing the identity and the new device's first
// Sync of a 20-item list — next to the anchor restore: the same new device
// set up from the backup key and synced (docs/benchmarks/tandem-pairing.md).
func BenchmarkPairing(b *testing.B) {
	for _, server := range []string{"dovecot", "cyrus"} {
		b.Run(server, func(b *testing.B) {
			h, _ := pairHub(b, server)
			a, err := Open(b.Context(), filepath.Join(b.TempDir(), "a"), Options{Name: "Jesper", Hub: h, Logger: quiet()})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			c, _ := a.NewCollection("Groceries")
			for i := range 20 {
				a.NewRecord(c, map[string][]byte{"title": []byte(fmt.Sprint("item ", i))})
			}
			if _, err := a.Sync(b.Context()); err != nil {
				b.Fatal(err)
			}
			b.Run("pairing", func(b *testing.B) {
				for b.Loop() {
					n := benchPairOnce(b, a, filepath.Join(b.TempDir(), "n"))
					checkBenchCopy(b, n, c)
				}
			})
			b.Run("restore", func(b *testing.B) {
				for b.Loop() {
					n, err := Restore(b.Context(), filepath.Join(b.TempDir(), "n"), a.ShowBackupKey(), Options{Logger: quiet(), Hub: h})
					if err != nil {
						b.Fatal(err)
					}
					checkBenchCopy(b, n, c)
				}
			})
		})
	}
}

func benchPairOnce(b *testing.B, a *Device, dir string) *Device {
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	offer, err := a.AddDevice(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer offer.Close(ctx)
	join, err := JoinDevice(ctx, dir, offer.Payload(), Options{Name: "laptop", Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	req, err := offer.Next(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if code, err := join.Code(ctx); err != nil || code != req.Code() {
		b.Fatalf("code %q %v", code, err)
	}
	if err := req.Approve(ctx); err != nil {
		b.Fatal(err)
	}
	n, err := join.Device(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func checkBenchCopy(b *testing.B, n *Device, c CollectionID) {
	defer n.Close()
	if _, err := n.Sync(b.Context()); err != nil {
		b.Fatal(err)
	}
	if recs, err := n.Records(c); err != nil || len(recs) != 20 {
		b.Fatalf("new device holds %d records: %v", len(recs), err)
	}
}
