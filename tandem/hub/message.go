package hub

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// The §10.4 message. Byte layout of what Build writes (CRLF line ends):
//
//	From: Tandem <tandem@invalid>
//	Date: <time of append, UTC, RFC 5322 format>
//	Message-ID: <random@tandem.invalid>
//	Subject: tandem
//	MIME-Version: 1.0
//	Tandem-Version: 1
//	Tandem-Channel: <channel tag>
//	Content-Type: text/plain; charset=us-ascii
//	Content-Transfer-Encoding: 7bit
//
//	<base64 of the envelope, wrapped at 76 characters>
const (
	// MaxMessage is the size every message stays under (§10.6: MUST stay
	// under 1 MiB).
	MaxMessage = 1 << 20
	// HeaderChannel and HeaderVersion are the two Tandem header fields.
	HeaderChannel = "Tandem-Channel"
	HeaderVersion = "Tandem-Version"
	// Version is the Tandem-Version this package writes and reads (§15).
	Version = "1"

	lineLen = 76
)

// Message is a parsed hub message.
type Message struct {
	Channel  string // Tandem-Channel, unfolded and trimmed
	Envelope []byte
}

// validChannel reports whether tag is a channel tag: b32 of 20 bytes, that is
// 32 characters of a-z and 2-7 (tandem-gaps.md). Tags are compared as bytes:
// upper case is another (invalid) tag.
func validChannel(tag string) bool {
	if len(tag) != 32 {
		return false
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// Build returns the exact RFC 5322 message of §10.4 for an IMAP append,
// dated now (in UTC) with a random Message-ID. It fails with [ErrBadChannel]
// for an invalid tag, [ErrNotEnvelope] for a body that is not an envelope,
// and [ErrTooLarge] when the message would reach [MaxMessage].
func Build(channel string, envelope []byte, now time.Time) ([]byte, error) {
	if !validChannel(channel) {
		return nil, fmt.Errorf("%w: %q", ErrBadChannel, channel)
	}
	if err := checkEnvelope(envelope); err != nil {
		return nil, err
	}
	if n := headerSizeBound + BodySize(len(envelope)); n >= MaxMessage {
		return nil, fmt.Errorf("%w: %d-byte envelope makes a message of about %d bytes", ErrTooLarge, len(envelope), n)
	}
	var b bytes.Buffer
	b.Grow(headerSizeBound + BodySize(len(envelope)))
	b.WriteString("From: Tandem <tandem@invalid>\r\n")
	b.WriteString("Date: " + now.UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700") + "\r\n")
	b.WriteString("Message-ID: <" + strings.ToLower(rand.Text()) + "@tandem.invalid>\r\n")
	b.WriteString("Subject: tandem\r\n")
	b.WriteString("MIME-Version: 1.0\r\n")
	b.WriteString(HeaderVersion + ": " + Version + "\r\n")
	b.WriteString(HeaderChannel + ": " + channel + "\r\n")
	b.WriteString("Content-Type: text/plain; charset=us-ascii\r\n")
	b.WriteString("Content-Transfer-Encoding: 7bit\r\n")
	b.WriteString("\r\n")
	b.WriteString(EncodeBody(envelope))
	return b.Bytes(), nil
}

// headerSizeBound bounds the header block Build writes.
const headerSizeBound = 400

// BodySize is the length of EncodeBody's result for an n-byte envelope.
func BodySize(n int) int {
	enc := base64.StdEncoding.EncodedLen(n)
	lines := (enc + lineLen - 1) / lineLen
	return enc + 2*lines
}

// EncodeBody returns the body text of §10.4: the standard base64 of envelope
// (with padding), wrapped at 76 characters, each line ending in CRLF. A JMAP
// binding sends the same text as the text/plain body value.
func EncodeBody(envelope []byte) string {
	enc := base64.StdEncoding.EncodeToString(envelope)
	var b strings.Builder
	b.Grow(BodySize(len(envelope)))
	for len(enc) > lineLen {
		b.WriteString(enc[:lineLen])
		b.WriteString("\r\n")
		enc = enc[lineLen:]
	}
	if enc != "" {
		b.WriteString(enc)
		b.WriteString("\r\n")
	}
	return b.String()
}
