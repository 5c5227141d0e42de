package jmaphub

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// FuzzDecodeResponse feeds arbitrary API answers to the response decoder:
// no panic, and every failure is a ProtocolError or a MethodError.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"methodResponses":[["Email/changes",{"newState":"2","created":["a"]},"0"]]}`))
	f.Add([]byte(`{"methodResponses":[["error",{"type":"cannotCalculateChanges"},"0"]]}`))
	f.Add([]byte(`{"methodResponses":[["Email/changes",{"newState":"2"`))
	f.Add([]byte(`{"methodResponses":[["Email/get",{},"0"],["Email/changes",{"created":null},"0"]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r emailChangesResp
		err := decodeResponse(data, []call{{"Email/changes", nil, &r}})
		if err != nil && !errors.Is(err, hub.ErrProtocol) && !errors.Is(err, ErrMethod) {
			t.Fatalf("error of an unexpected kind: %v", err)
		}
	})
}

// FuzzSSE parses arbitrary event streams: no panic, and no event's data
// holds a line break other than the "\n" that joins data lines.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("event: state\r\ndata: {}\r\n\r\n"))
	f.Add([]byte("event: ping\ndata: {\"interval\":1}\n\n:comment\n\ndata:a\rdata:b\r\r"))
	f.Add([]byte("data\n\nevent\ndata:\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newSSEReader(bytes.NewReader(data))
		for range 1 + bytes.Count(data, []byte{'\n'}) + bytes.Count(data, []byte{'\r'}) {
			ev, err := r.next()
			if err != nil {
				return
			}
			if strings.ContainsRune(ev.Data, '\r') || strings.ContainsAny(ev.Type, "\r\n") {
				t.Fatalf("event %+v holds a CR", ev)
			}
		}
		if _, err := r.next(); err == nil {
			t.Fatal("more events than line breaks")
		}
	})
}

// FuzzCursor: any bytes either fail with hub.ErrBadCursor or decode to a
// cursor whose encoding decodes to the same cursor.
func FuzzCursor(f *testing.F) {
	f.Add([]byte(`{"v":1,"account":"a","mailbox":"m","state":"5","known":["b","a","a"]}`))
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decodeCursor(data)
		if err != nil {
			if !errors.Is(err, hub.ErrBadCursor) {
				t.Fatalf("error of an unexpected kind: %v", err)
			}
			return
		}
		enc := c.encode()
		c2, err := decodeCursor(enc)
		if err != nil {
			t.Fatalf("re-decoding %q: %v", enc, err)
		}
		if !bytes.Equal(c2.encode(), enc) {
			t.Fatalf("cursor encoding is not stable: %q vs %q", c2.encode(), enc)
		}
	})
}

// TestSSERoundTrip: random events, written with random line ends and
// comments, parse back to the same events.
func TestSSERoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ends := []string{"\n", "\r\n", "\r"}
	word := func() string {
		const chars = "abc {}\":,0123456789é"
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(string([]rune(chars)[rng.IntN(len([]rune(chars)))]))
		}
		return b.String()
	}
	for range 300 {
		var want []sseEvent
		var stream strings.Builder
		last := ""
		end := func() string { last = ends[rng.IntN(3)]; return last }
		// A CR then an empty line ended by LF reads as one CRLF: that
		// blank line must end otherwise.
		blank := func() string {
			if last == "\r" {
				last = ends[1+rng.IntN(2)]
				return last
			}
			return end()
		}
		for range 1 + rng.IntN(5) {
			ev := sseEvent{Type: strings.TrimLeft(word(), " ")}
			lines := []string{}
			for range 1 + rng.IntN(3) {
				lines = append(lines, word())
			}
			ev.Data = strings.Join(lines, "\n")
			if rng.IntN(3) == 0 {
				stream.WriteString(":" + word() + end())
			}
			if ev.Type != "" {
				stream.WriteString("event: " + ev.Type + end())
			}
			for _, l := range lines {
				stream.WriteString("data: " + l + end())
			}
			stream.WriteString(blank())
			want = append(want, ev)
		}
		r := newSSEReader(strings.NewReader(stream.String()))
		for i, w := range want {
			got, err := r.next()
			if err != nil || got != w {
				t.Fatalf("stream %q: event %d = %+v, %v; want %+v", stream.String(), i, got, err, w)
			}
		}
		if _, err := r.next(); err != io.EOF {
			t.Fatalf("after the last event: %v, want EOF", err)
		}
	}
}
