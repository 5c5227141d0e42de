package jmaphub

import (
	"context"
	"encoding/base64"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// userBench is the account the benchmarks fill (dave).
const userBench = 3

// benchMessages is how many messages the initial-sync benchmark syncs
// (FERRY_BENCH_MESSAGES overrides it).
func benchMessages() int {
	if n, err := strconv.Atoi(os.Getenv("FERRY_BENCH_MESSAGES")); err == nil && n > 0 {
		return n
	}
	return 2000
}

// BenchmarkCyrusInitialSync measures an initial sync on Cyrus through the
// binding (Changes from nil + Fetch + decode of every message) against the
// anchor: the same emails read with the fewest raw JMAP requests
// (Email/query of all ids, then Email/get with fetchTextBodyValues in
// batches of maxObjectsInGet, base64 only), on the same connection pool.
// Messages are 1 KiB envelopes on 8 channels.
func BenchmarkCyrusInitialSync(b *testing.B) {
	cfg := benchConfig(b)
	st, err := Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	n := benchMessages()
	fillBench(b, st, n)
	mb, _ := st.ensureMailbox(context.Background())

	b.Run("binding", func(b *testing.B) {
		for b.Loop() {
			c, err := st.Changes(context.Background(), nil)
			if err != nil || len(c.Added) != n {
				b.Fatalf("Changes: %d added, %v", len(c.Added), err)
			}
			ids := make([]hub.ID, len(c.Added))
			for i, a := range c.Added {
				ids[i] = a.ID
			}
			bodies, err := st.Fetch(context.Background(), ids)
			if err != nil {
				b.Fatal(err)
			}
			for _, body := range bodies {
				if body.Err != nil {
					b.Fatal(body.Err)
				}
			}
		}
	})
	b.Run("changes-only", func(b *testing.B) {
		for b.Loop() {
			if c, err := st.Changes(context.Background(), nil); err != nil || len(c.Added) != n {
				b.Fatalf("Changes: %d added, %v", len(c.Added), err)
			}
		}
	})
	b.Run("raw-anchor", func(b *testing.B) {
		for b.Loop() {
			var q queryResp
			if err := st.request(context.Background(), call{"Email/query", map[string]any{
				"accountId": st.s.accountID, "filter": map[string]any{"inMailbox": mb}, "limit": n,
			}, &q}); err != nil || len(q.IDs) != n {
				b.Fatalf("query: %d ids, %v", len(q.IDs), err)
			}
			for _, r := range batches(len(q.IDs), st.s.maxObjectsInGet) {
				var g struct {
					List []struct {
						BodyValues map[string]bodyValue `json:"bodyValues"`
					} `json:"list"`
				}
				if err := st.request(context.Background(), call{"Email/get", map[string]any{
					"accountId": st.s.accountID, "ids": q.IDs[r[0]:r[1]], "properties": []string{"bodyValues"},
					"fetchTextBodyValues": true,
				}, &g}); err != nil {
					b.Fatal(err)
				}
				for _, e := range g.List {
					text := strings.Join(strings.Fields(e.BodyValues["1"].Value), "")
					if _, err := base64.StdEncoding.DecodeString(text); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	})
}

func benchConfig(b *testing.B) Config {
	url := realtest.Getenv("FERRY_CYRUS_JMAP_URL")
	users := strings.Split(realtest.Getenv("FERRY_CYRUS_USERS"), ",")
	if url == "" || len(users) <= userBench {
		b.Skip("no Cyrus configured (scripts/setup.d/20-cyrus.sh)")
	}
	user, pass, _ := strings.Cut(users[userBench], ":")
	return Config{SessionURL: url, Username: user, Password: pass, PollInterval: time.Second,
		Budget: hub.NewRateBudget(hub.Rate{}, hub.Rate{})} // benchmarks append thousands
}

// fillBench makes the Tandem mailbox hold exactly n benchmark messages,
// keeping what an earlier run stored.
func fillBench(b *testing.B, st *Store, n int) {
	ctx := context.Background()
	c, err := st.Changes(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	if len(c.Added) == n {
		return
	}
	ids := make([]hub.ID, len(c.Added))
	for i, a := range c.Added {
		ids[i] = a.ID
	}
	if err := st.Destroy(ctx, ids); err != nil {
		b.Fatal(err)
	}
	msgs := make([]hub.Message, n)
	for i := range msgs {
		msgs[i] = hub.Message{Channel: hubtest.Channel(i % 8), Envelope: hubtest.Envelope(1024)}
	}
	if _, err := st.appendBatch(ctx, msgs); err != nil {
		b.Fatal(err)
	}
}
