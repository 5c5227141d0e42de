package imaphub

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// Benchmarks against the real Dovecot (user grace). See
// docs/benchmarks/tandem-hub.md for figures and the command.

const (
	syncMessages = 5000
	syncEnvelope = 1024 // bytes: a typical record-state message
)

// populate makes grace's Tandem folder hold exactly syncMessages messages.
func populate(b *testing.B, cfg Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.EnsureFolder(ctx); err != nil {
		b.Fatal(err)
	}
	c, err := s.Changes(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	if len(c.Added) == syncMessages {
		return
	}
	var all []hub.ID
	for _, a := range c.Added {
		all = append(all, a.ID)
	}
	if err := s.Destroy(ctx, all); err != nil {
		b.Fatal(err)
	}
	for i := range syncMessages {
		if _, err := s.Append(ctx, hubtest.Channel(i%20), hubtest.Envelope(syncEnvelope)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInitialSync compares a first sync of 5,000 messages (Changes,
// Fetch, decode) with the anchor: one raw UID FETCH 1:* BODY.PEEK[TEXT] of
// the same messages over one connection, reading only the bytes. Each
// iteration runs both, one after the other, so that load from elsewhere on
// the machine hits both alike; it reports their times and the ratio.
func BenchmarkInitialSync(b *testing.B) {
	cfg := dovecot(b, "FERRY_DOVECOT_ADDR", "grace")
	cfg.Budget = hub.NewRateBudget(hub.Rate{}, hub.Rate{}) // benchmarks append thousands
	populate(b, cfg)
	ctx := context.Background()
	s, err := Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	// The anchor runs on the store's own connection, with the folder
	// selected, so that both read through one server process.
	if _, err := s.Changes(ctx, nil); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	// The server's share of a sync, read without parsing or decoding: the
	// two FETCH commands as §10.3 words them, and the two this binding
	// sends (header.go: the header fields once, then the text alone).
	spec := []string{
		"UID FETCH 1:* (UID BODY.PEEK[HEADER.FIELDS (Tandem-Channel)])",
		"UID FETCH 1:* (UID BODY.PEEK[HEADER.FIELDS (Tandem-Version Tandem-Channel Content-Type Content-Transfer-Encoding)] BODY.PEEK[TEXT])",
	}
	binding := []string{
		"UID FETCH 1:* (UID BODY.PEEK[HEADER.FIELDS (" + changesFields + ")])",
		"UID FETCH 1:* (UID BODY.PEEK[TEXT])",
	}
	rawCmds := func(cmds []string) (time.Duration, error) {
		t0 := time.Now()
		for _, cmd := range cmds {
			if _, err := io.WriteString(s.c.nc, "f "+cmd+"\r\n"); err != nil {
				return 0, err
			}
			if _, _, err := rawRead(s.c.rd.r, buf); err != nil {
				return 0, err
			}
		}
		return time.Since(t0), nil
	}
	var raw, floor, bfloor, tandem []time.Duration
	for b.Loop() {
		t0 := time.Now()
		s.mu.Lock()
		n, _, err := rawFetch(s.c.nc, s.c.rd.r, buf)
		t1 := time.Now()
		var fs, fb time.Duration
		if err == nil {
			fs, err = rawCmds(spec)
		}
		if err == nil {
			fb, err = rawCmds(binding)
		}
		s.mu.Unlock()
		if err != nil || n != syncMessages {
			b.Fatalf("raw fetch: %d messages, %v", n, err)
		}
		t2 := time.Now()
		initialSync(b, s)
		t3 := time.Now()
		raw = append(raw, t1.Sub(t0))
		floor = append(floor, fs)
		bfloor = append(bfloor, fb)
		tandem = append(tandem, t3.Sub(t2))
	}
	// Medians, and the median of per-iteration ratios: the machine is
	// shared, and a load spike should not decide the figure.
	ratio := func(a, b []time.Duration) float64 {
		r := make([]float64, len(a))
		for i := range a {
			r[i] = float64(a[i]) / float64(b[i])
		}
		slices.Sort(r)
		return r[len(r)/2]
	}
	ms := func(d []time.Duration) float64 {
		d = slices.Clone(d)
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	b.ReportMetric(ms(raw), "anchor-raw-ms")
	b.ReportMetric(ms(floor), "spec-cmds-raw-ms")
	b.ReportMetric(ms(tandem), "tandem-ms")
	b.ReportMetric(ms(bfloor), "binding-cmds-raw-ms")
	b.ReportMetric(ratio(floor, raw), "floor-x-anchor")
	b.ReportMetric(ratio(bfloor, raw), "binding-floor-x-anchor")
	b.ReportMetric(ratio(tandem, raw), "x-anchor")
}

// initialSync is Changes from nothing, then Fetch of every id, decoded.
func initialSync(b *testing.B, s *Store) {
	ctx := context.Background()
	c, err := s.Changes(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]hub.ID, len(c.Added))
	for i, a := range c.Added {
		ids[i] = a.ID
	}
	bodies, err := s.Fetch(ctx, ids)
	if err != nil {
		b.Fatal(err)
	}
	for _, body := range bodies {
		if body.Err != nil || len(body.Envelope) != syncEnvelope {
			b.Fatalf("body %s: %v", body.ID, body.Err)
		}
	}
	if len(bodies) != syncMessages {
		b.Fatalf("%d bodies", len(bodies))
	}
}

// rawFetch sends UID FETCH 1:* BODY.PEEK[TEXT] and reads the answer,
// skipping over literals: the least work a client can do.
func rawFetch(nc net.Conn, rd *bufio.Reader, buf []byte) (n int, total int64, err error) {
	if _, err := io.WriteString(nc, "f UID FETCH 1:* BODY.PEEK[TEXT]\r\n"); err != nil {
		return 0, 0, err
	}
	return rawRead(rd, buf)
}

// rawRead reads responses up to the tagged "f" completion, skipping
// literals, and counts them.
func rawRead(rd *bufio.Reader, buf []byte) (n int, total int64, err error) {
	for {
		line, err := rd.ReadSlice('\n')
		if err != nil {
			return n, total, err
		}
		if len(line) > 2 && line[0] == 'f' && line[1] == ' ' {
			return n, total, nil
		}
		// No allocation per line: the anchor is the least a client can do.
		s := bytes.TrimRight(line, "\r\n")
		if i := bytes.LastIndexByte(s, '{'); i >= 0 && bytes.HasSuffix(s, []byte("}")) {
			var size int64
			for _, c := range s[i+1 : len(s)-1] {
				size = size*10 + int64(c-'0')
			}
			for size > 0 {
				k, err := rd.Read(buf[:min(int64(len(buf)), size)])
				if err != nil {
					return n, total, err
				}
				size -= int64(k)
				total += int64(k)
			}
			n++
		}
	}
}

// BenchmarkPushLatency: append on connection A until Watch's callback on
// connection B; reports p50 and p95.
func BenchmarkPushLatency(b *testing.B) {
	cfg := dovecot(b, "FERRY_DOVECOT_ADDR", "grace")
	cfg.Budget = hub.NewRateBudget(hub.Rate{}, hub.Rate{}) // benchmarks append thousands
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	w, err := Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	if err := a.EnsureFolder(ctx); err != nil {
		b.Fatal(err)
	}
	calls := make(chan time.Time, 1024)
	done := make(chan error, 1)
	go func() { done <- w.Watch(ctx, func() { calls <- time.Now() }) }()
	<-calls
	var lat []time.Duration
	env := hubtest.Envelope(syncEnvelope)
	for b.Loop() {
		drainTimes(calls)
		start := time.Now()
		if _, err := a.Append(ctx, hubtest.Channel(1), env); err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-calls:
			lat = append(lat, at.Sub(start))
		case err := <-done:
			b.Fatalf("Watch ended: %v", err)
		case <-time.After(30 * time.Second):
			b.Fatal("no push within 30s")
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
	cancel()
	<-done
}

func drainTimes(c chan time.Time) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
