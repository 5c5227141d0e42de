package hubtest

import (
	"bytes"
	"encoding/base64"
	"mime/quotedprintable"
	"strings"
	"unicode/utf16"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// Encoding is one way a server may store a message body: a charset and a
// transfer encoding (§10.4 reading steps 1 and 2).
type Encoding struct {
	Name     string
	Charset  string // the Content-Type charset parameter; "" for none
	Transfer string // the Content-Transfer-Encoding; "" for none
	// Fold folds the Tandem-Channel header onto a continuation line.
	Fold bool
}

var encodings = []Encoding{
	{Name: "us-ascii 7bit", Charset: "us-ascii", Transfer: "7bit"},
	{Name: "no charset, no transfer encoding, folded channel", Fold: true},
	{Name: "utf-8 quoted-printable", Charset: "utf-8", Transfer: "quoted-printable"},
	{Name: "iso-8859-1 8bit", Charset: "ISO-8859-1", Transfer: "8bit"},
	{Name: "utf-8 base64", Charset: "UTF-8", Transfer: "base64"},
	{Name: "utf-16 (BOM, big endian) base64", Charset: "UTF-16", Transfer: "base64"},
	{Name: "utf-16le base64", Charset: "utf-16le", Transfer: "Base64"},
	{Name: "utf-16be base64", Charset: "utf-16be", Transfer: "base64"},
}

// Encodings returns the body encodings the suite stores with Inject.
func Encodings() []Encoding { return append([]Encoding(nil), encodings...) }

// RawMessage returns a message carrying envelope on channel, its body stored
// in enc, with CRLF line ends.
func RawMessage(channel string, envelope []byte, enc Encoding) []byte {
	text := hub.EncodeBody(envelope)
	var body []byte
	switch strings.ToLower(enc.Charset) {
	case "utf-16":
		body = append([]byte{0xfe, 0xff}, utf16Bytes(text, true)...)
	case "utf-16be":
		body = utf16Bytes(text, true)
	case "utf-16le":
		body = utf16Bytes(text, false)
	default:
		body = []byte(text)
	}
	switch strings.ToLower(enc.Transfer) {
	case "quoted-printable":
		var b bytes.Buffer
		w := quotedprintable.NewWriter(&b)
		w.Write([]byte(strings.ReplaceAll(text, "\r\n", ""))) // one long line, soft breaks
		w.Close()
		body = b.Bytes()
	case "base64":
		body = []byte(wrap(base64.StdEncoding.EncodeToString(body)))
	}
	var m bytes.Buffer
	m.WriteString("From: Tandem <tandem@invalid>\r\nSubject: tandem\r\nMIME-Version: 1.0\r\n")
	m.WriteString("Message-ID: <" + channel[:12] + "." + enc.Transfer + "@hubtest.invalid>\r\n")
	m.WriteString("Tandem-Version: 1\r\n")
	if enc.Fold {
		m.WriteString("Tandem-Channel:\r\n \t" + channel + " \r\n")
	} else {
		m.WriteString("Tandem-Channel: " + channel + "\r\n")
	}
	if enc.Charset != "" {
		m.WriteString("Content-Type: text/plain; charset=\"" + enc.Charset + "\"\r\n")
	}
	if enc.Transfer != "" {
		m.WriteString("Content-Transfer-Encoding: " + enc.Transfer + "\r\n")
	}
	m.WriteString("\r\n")
	m.Write(body)
	return m.Bytes()
}

func utf16Bytes(s string, bigEndian bool) []byte {
	u := utf16.Encode([]rune(s))
	out := make([]byte, 0, 2*len(u))
	for _, c := range u {
		if bigEndian {
			out = append(out, byte(c>>8), byte(c))
		} else {
			out = append(out, byte(c), byte(c>>8))
		}
	}
	return out
}

func wrap(s string) string {
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76] + "\r\n")
		s = s[76:]
	}
	return b.String() + s + "\r\n"
}

// NotEnvelope is a message a reader must not take for an envelope.
type NotEnvelope struct {
	Name    string
	Channel string // "" when the message has no Tandem-Channel header
	Raw     []byte
	Want    error // what Fetch reports in Body.Err
}

// NotEnvelopes returns messages that Changes lists (when they carry a
// channel header) but whose bodies are not envelopes of a known version.
func NotEnvelopes() []NotEnvelope {
	msg := func(hdr, body string) []byte {
		return []byte("From: someone <x@example.org>\r\nSubject: hello\r\n" + hdr + "\r\n" + body)
	}
	v2 := Envelope(80)
	v2[4] = 2
	upper := strings.ToUpper(Channel(30))
	return []NotEnvelope{
		{Name: "plain text", Channel: Channel(31), Want: hub.ErrNotEnvelope,
			Raw: msg("Tandem-Version: 1\r\nTandem-Channel: "+Channel(31)+"\r\n", "Hello, this is not base64!\r\n")},
		{Name: "base64 of text", Channel: Channel(32), Want: hub.ErrNotEnvelope,
			Raw: msg("Tandem-Version: 1\r\nTandem-Channel: "+Channel(32)+"\r\n", base64.StdEncoding.EncodeToString([]byte("hello world, no magic here at all, sorry"))+"\r\n")},
		{Name: "truncated envelope", Channel: Channel(33), Want: hub.ErrNotEnvelope,
			Raw: msg("Tandem-Version: 1\r\nTandem-Channel: "+Channel(33)+"\r\n", base64.StdEncoding.EncodeToString(Envelope(80)[:20])+"\r\n")},
		{Name: "envelope version 2", Channel: Channel(34), Want: hub.ErrUnknownVersion,
			Raw: msg("Tandem-Version: 1\r\nTandem-Channel: "+Channel(34)+"\r\n", hub.EncodeBody(v2))},
		{Name: "Tandem-Version 2", Channel: Channel(35), Want: hub.ErrUnknownVersion,
			Raw: msg("Tandem-Version: 2\r\nTandem-Channel: "+Channel(35)+"\r\n", hub.EncodeBody(Envelope(80)))},
		{Name: "unknown charset", Channel: Channel(36), Want: hub.ErrNotEnvelope,
			Raw: msg("Tandem-Version: 1\r\nTandem-Channel: "+Channel(36)+"\r\nContent-Type: text/plain; charset=x-no-such-charset\r\n", hub.EncodeBody(Envelope(80)))},
		// The tag is reported as stored, not case-folded (§10.4).
		{Name: "upper-case tag", Channel: upper, Want: nil,
			Raw: msg("Tandem-Version: 1\r\nTandem-Channel: "+upper+"\r\n", hub.EncodeBody(Envelope(80)))},
		{Name: "no channel header", Channel: "", Want: nil,
			Raw: msg("Tandem-Version: 1\r\n", hub.EncodeBody(Envelope(80)))},
	}
}
