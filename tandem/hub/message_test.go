package hub_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

func TestBuildExactFormat(t *testing.T) {
	env := hubtest.Envelope(200)
	ch := hubtest.Channel(1)
	now := time.Date(2026, 11, 29, 23, 4, 5, 0, time.FixedZone("X", 3600))
	msg, err := hub.Build(ch, env, now)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(msg), "\r\n")
	want := []string{
		"From: Tandem <tandem@invalid>",
		"Date: Sun, 29 Nov 2026 22:04:05 +0000",
		"", // Message-ID, checked below
		"Subject: tandem",
		"MIME-Version: 1.0",
		"Tandem-Version: 1",
		"Tandem-Channel: " + ch,
		"Content-Type: text/plain; charset=us-ascii",
		"Content-Transfer-Encoding: 7bit",
		"",
	}
	for i, w := range want {
		if i == 2 {
			if !strings.HasPrefix(lines[i], "Message-ID: <") || !strings.HasSuffix(lines[i], "@tandem.invalid>") {
				t.Errorf("line %d = %q, want a random Message-ID at tandem.invalid", i, lines[i])
			}
			continue
		}
		if lines[i] != w {
			t.Errorf("line %d = %q, want %q", i, lines[i], w)
		}
	}
	body := lines[len(want) : len(lines)-1]
	for i, l := range body {
		if len(l) > 76 || (i < len(body)-1 && len(l) != 76) {
			t.Errorf("body line %d has %d characters; lines wrap at 76", i, len(l))
		}
	}
	if lines[len(lines)-1] != "" {
		t.Error("message does not end in CRLF")
	}
	if bytes.Contains(bytes.ReplaceAll(msg, []byte("\r\n"), nil), []byte("\n")) {
		t.Error("bare LF in the message")
	}
	m, err := hub.ParseMessage(msg)
	if err != nil || m.Channel != ch || !bytes.Equal(m.Envelope, env) {
		t.Fatalf("ParseMessage(Build) = %q, %v", m.Channel, err)
	}
	msg2, _ := hub.Build(ch, env, now)
	if bytes.Equal(msg, msg2) {
		t.Error("two builds share a Message-ID")
	}
}

func TestBuildRejects(t *testing.T) {
	env := hubtest.Envelope(100)
	for _, tag := range []string{"", "short", strings.ToUpper(hubtest.Channel(0)), hubtest.Channel(0)[:31] + "1", hubtest.Channel(0) + "a", hubtest.Channel(0)[:31] + "\n"} {
		if _, err := hub.Build(tag, env, time.Now()); !errors.Is(err, hub.ErrBadChannel) {
			t.Errorf("Build(tag %q): %v, want ErrBadChannel", tag, err)
		}
	}
	if _, err := hub.Build(hubtest.Channel(0), env[:hub.MinEnvelope-1], time.Now()); !errors.Is(err, hub.ErrNotEnvelope) {
		t.Errorf("short envelope: %v", err)
	}
	if _, err := hub.Build(hubtest.Channel(0), hubtest.Envelope(hub.MaxMessage*3/4), time.Now()); !errors.Is(err, hub.ErrTooLarge) {
		t.Errorf("1 MiB message: %v", err)
	}
}

func TestParseHeaderUnfold(t *testing.T) {
	h, err := hub.ParseHeader([]byte("Subject: a\r\n b\r\nTandem-Channel:\r\n\t  abc  \r\nX: 1\nx: 2\n\nBody: no\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("subject"); got != "a b" {
		t.Errorf("Subject = %q, want unfolded %q", got, "a b")
	}
	if got := h.Get("TANDEM-CHANNEL"); got != "abc" {
		t.Errorf("Tandem-Channel = %q, want trimmed abc", got)
	}
	if got := h["x"]; len(got) != 2 || got[0] != "1" || got[1] != "2" {
		t.Errorf("X = %q", got)
	}
	if _, ok := h["body"]; ok {
		t.Error("read past the empty line")
	}
	for _, bad := range []string{" leading continuation\r\n", "no colon here\r\n", "Bad Name: x\r\n", ": empty name\r\n"} {
		if _, err := hub.ParseHeader([]byte(bad)); !errors.Is(err, hub.ErrNotEnvelope) {
			t.Errorf("ParseHeader(%q): %v, want ErrNotEnvelope", bad, err)
		}
	}
}

func TestEncodingsRoundTrip(t *testing.T) {
	for i, enc := range hubtest.Encodings() {
		env := hubtest.Envelope(50 + 97*i)
		m, err := hub.ParseMessage(hubtest.RawMessage(hubtest.Channel(i), env, enc))
		if err != nil || m.Channel != hubtest.Channel(i) || !bytes.Equal(m.Envelope, env) {
			t.Errorf("%s: channel %q, err %v", enc.Name, m.Channel, err)
		}
	}
}

func TestNotEnvelopes(t *testing.T) {
	for _, nc := range hubtest.NotEnvelopes() {
		_, err := hub.ParseMessage(nc.Raw)
		want := nc.Want
		if nc.Channel == "" {
			want = hub.ErrNotEnvelope
		}
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", nc.Name, err, want)
		}
	}
}

func TestDecodeBodyUTF16(t *testing.T) {
	env := hubtest.Envelope(64)
	text := hub.EncodeBody(env)
	le := make([]byte, 0, 2*len(text)+2)
	le = append(le, 0xff, 0xfe) // BOM, little endian, under charset=utf-16
	for _, c := range []byte(text) {
		le = append(le, c, 0)
	}
	got, err := hub.DecodeBody(`text/plain; charset="UTF-16"`, "binary", le)
	if err != nil || !bytes.Equal(got, env) {
		t.Fatalf("UTF-16 LE with BOM: %v", err)
	}
	// Without the charset step the NULs make it garbage.
	if _, err := hub.DecodeBody("text/plain", "binary", le); !errors.Is(err, hub.ErrNotEnvelope) {
		t.Fatalf("UTF-16 read as us-ascii: %v, want ErrNotEnvelope", err)
	}
}

func TestDecodeTextJMAP(t *testing.T) {
	env := hubtest.Envelope(300)
	lf := strings.ReplaceAll(hub.EncodeBody(env), "\r\n", "\n") // JMAP turns CRLF into LF
	got, err := hub.DecodeText(lf)
	if err != nil || !bytes.Equal(got, env) {
		t.Fatalf("DecodeText: %v", err)
	}
	if _, err := hub.DecodeText("@@@@"); !errors.Is(err, hub.ErrNotEnvelope) {
		t.Fatalf("DecodeText(garbage): %v", err)
	}
}

// FuzzParseMessage: any bytes from a server give an envelope or an error
// that is one of the documented kinds, never a panic; what it returns as an
// envelope is one.
func FuzzParseMessage(f *testing.F) {
	for i, enc := range hubtest.Encodings() {
		f.Add(hubtest.RawMessage(hubtest.Channel(i), hubtest.Envelope(60), enc))
	}
	for _, nc := range hubtest.NotEnvelopes() {
		f.Add(nc.Raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := hub.ParseMessage(raw)
		if err != nil {
			if !errors.Is(err, hub.ErrNotEnvelope) && !errors.Is(err, hub.ErrUnknownVersion) && !errors.Is(err, hub.ErrTooLarge) {
				t.Fatalf("undocumented error: %v", err)
			}
			return
		}
		// An envelope: magic, version 1, at least the minimum length.
		if !bytes.HasPrefix(m.Envelope, []byte("TNDM\x01")) || len(m.Envelope) < hub.MinEnvelope || m.Channel == "" {
			t.Fatalf("accepted %q with channel %q", m.Envelope, m.Channel)
		}
	})
}

// TestOddMessagesOneReading: hub.ParseMessage (the IMAP reader, and the
// JMAP reader's raw fallback) reads the one-reading corpus as it says.
func TestOddMessagesOneReading(t *testing.T) {
	for _, o := range hubtest.OddMessages(true) {
		m, err := hub.ParseMessage(o.Raw)
		switch {
		case o.Want != nil:
			if !errors.Is(err, o.Want) {
				t.Errorf("%s: %v, want %v", o.Name, err, o.Want)
			}
		case err != nil:
			t.Errorf("%s: %v", o.Name, err)
		case m.Channel != o.Channel || !bytes.Equal(m.Envelope, o.Envelope):
			t.Errorf("%s: channel %q, envelope %d bytes; want %q, %d bytes", o.Name, m.Channel, len(m.Envelope), o.Channel, len(o.Envelope))
		}
	}
}
