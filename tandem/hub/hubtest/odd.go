package hubtest

import (
	"bytes"

	"strings"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// Odd is one message of the one-reading corpus (§10.4): a message another
// client or a server might have stored, which every binding must read the
// same way.
type Odd struct {
	Name string
	Raw  []byte // complete RFC 5322 message, CRLF line ends
	// Channel is what Changes reports ("" when the message is not listed).
	Channel string
	// Envelope is what Fetch returns, or nil when Fetch reports Want.
	Envelope []byte
	Want     error // the sentinel Body.Err matches; nil when Envelope is set
}

// OddMessages returns the corpus. The large cases (a 1.5 MiB envelope, a
// 6 MB body) are included only when large is set.
func OddMessages(large bool) []Odd {
	head := func(i int, extra string) string {
		return "From: someone <x@example.org>\r\nSubject: odd\r\nMessage-ID: <odd" +
			strings.Repeat("x", i%3) + Channel(40 + i)[:10] + "@hubtest.invalid>\r\nMIME-Version: 1.0\r\n" + extra
	}
	env := func(i int) []byte { return deterministicEnvelope(i, 90) }
	ch := func(i int) string { return Channel(40 + i) }
	tv := "Tandem-Version: 1\r\n"
	tc := func(i int) string { return "Tandem-Channel: " + ch(i) + "\r\n" }
	body := func(i int) string { return hub.EncodeBody(env(i)) }
	out := []Odd{
		{Name: "plain", Raw: []byte(head(0, tv+tc(0)+"\r\n") + body(0)), Channel: ch(0), Envelope: env(0)},
		{Name: "two Tandem-Channel fields: the last counts", Channel: ch(1), Envelope: env(1),
			Raw: []byte(head(1, tv+tc(2)+tc(1)+"\r\n") + body(1))},
		{Name: "two Tandem-Version fields, last 1", Channel: ch(3), Envelope: env(3),
			Raw: []byte(head(3, "Tandem-Version: 2\r\n"+tv+tc(3)+"\r\n") + body(3))},
		{Name: "two Tandem-Version fields, last 2", Channel: ch(4), Want: hub.ErrUnknownVersion,
			Raw: []byte(head(4, tv+"Tandem-Version: 2\r\n"+tc(4)+"\r\n") + body(4))},
		{Name: "multipart/mixed", Channel: ch(5), Want: hub.ErrNotEnvelope,
			Raw: []byte(head(5, tv+tc(5)+"Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n") +
				"--b1\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n" + body(5) + "--b1--\r\n")},
		{Name: "message/rfc822", Channel: ch(6), Want: hub.ErrNotEnvelope,
			Raw: []byte(head(6, tv+tc(6)+"Content-Type: message/rfc822\r\n\r\n") +
				"Subject: inner\r\nContent-Type: text/plain\r\n\r\n" + body(6))},
		{Name: "application/octet-stream", Channel: ch(7), Want: hub.ErrNotEnvelope,
			Raw: []byte(head(7, tv+tc(7)+"Content-Type: application/octet-stream\r\n\r\n") + body(7))},
		{Name: "empty body", Channel: ch(8), Want: hub.ErrNotEnvelope,
			Raw: []byte(head(8, tv+tc(8)+"\r\n"))},
		{Name: "space before the colon", Channel: ch(9), Envelope: env(9),
			Raw: []byte(head(9, "Tandem-Version : 1\r\nTandem-Channel : "+ch(9)+"\r\n\r\n") + body(9))},
		{Name: "no-break spaces in an ISO-8859-1 body", Channel: ch(10), Envelope: env(10),
			Raw: append([]byte(head(10, tv+tc(10)+"Content-Type: text/plain; charset=ISO-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")),
				nbspBody(body(10))...)},
		{Name: "two Content-Type fields", Channel: ch(11), Want: hub.ErrNotEnvelope,
			Raw: []byte(head(11, tv+tc(11)+"Content-Type: text/plain; charset=us-ascii\r\nContent-Type: text/plain; charset=utf-16\r\n\r\n") + body(11))},
		{Name: "text/html", Channel: ch(12), Want: hub.ErrNotEnvelope,
			Raw: []byte(head(12, tv+tc(12)+"Content-Type: text/html; charset=us-ascii\r\n\r\n") + body(12))},
		{Name: "folded channel, quoted-printable", Channel: ch(13), Envelope: env(13),
			Raw: []byte(head(13, tv+"Tandem-Channel:\r\n  "+ch(13)+"  \r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n") +
				strings.ReplaceAll(body(13), "\r\n", "=\r\n"))},
	}
	if large {
		big := deterministicEnvelope(14, 3<<19) // 1.5 MiB
		out = append(out,
			Odd{Name: "1.5 MiB envelope", Channel: ch(14), Want: hub.ErrTooLarge,
				Raw: []byte(head(14, tv+tc(14)+"\r\n") + hub.EncodeBody(big))},
			Odd{Name: "6 MB body", Channel: ch(15), Want: hub.ErrTooLarge,
				Raw: []byte(head(15, tv+tc(15)+"\r\n") + hub.EncodeBody(deterministicEnvelope(15, 9<<19)))},
		)
	}
	return out
}

// nbspBody puts an ISO-8859-1 no-break space (0xA0) in the middle of
// every line of a base64 body.
func nbspBody(text string) []byte {
	var b bytes.Buffer
	for _, line := range strings.SplitAfter(text, "\r\n") {
		if len(line) > 10 {
			b.WriteString(line[:10])
			b.WriteByte(0xa0)
			b.WriteString(line[10:])
			continue
		}
		b.WriteString(line)
	}
	return b.Bytes()
}

// deterministicEnvelope is a well-formed envelope of n bytes, the same for
// the same seed (so both bindings can be compared with fixed bytes).
func deterministicEnvelope(seed, n int) []byte {
	env := make([]byte, n)
	x := uint32(seed*2654435761 + 1)
	for i := range env {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		env[i] = byte(x)
	}
	copy(env, "TNDM\x01\x01")
	return env
}
