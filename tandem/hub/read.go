package hub

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding/ianaindex"
)

// Envelope layout (§5.4): magic "TNDM" (4) || version u8 = 1 || kind u8 ||
// salt or key ID (32) || ciphertext. The shortest ciphertext is an AEAD tag
// (16 bytes).
const (
	envelopeMagic   = "TNDM"
	envelopeVersion = 1
	// MinEnvelope is the length of the shortest well-formed envelope.
	MinEnvelope = 4 + 1 + 1 + 32 + 16
)

// Hash is a message's identity across bindings and devices: H(envelope),
// SHA-256 (§10.4).
func Hash(envelope []byte) [32]byte { return sha256.Sum256(envelope) }

// checkEnvelope checks what the hub may know of an envelope: its magic,
// version (§15) and minimum length. It does not open it.
func checkEnvelope(env []byte) error {
	if len(env) < 6 || string(env[:4]) != envelopeMagic {
		return fmt.Errorf("%w: no TNDM magic", ErrNotEnvelope)
	}
	if env[4] != envelopeVersion {
		return fmt.Errorf("%w: envelope version %d", ErrUnknownVersion, env[4])
	}
	if len(env) < MinEnvelope {
		return fmt.Errorf("%w: %d bytes is shorter than an envelope", ErrNotEnvelope, len(env))
	}
	return nil
}

// Header holds a message's header fields by lower-case name, each value
// unfolded (RFC 5322 §2.2.3: a CRLF followed by white space is removed) and
// trimmed of surrounding white space.
type Header map[string][]string

// Get returns the last value of the named field, or "" if it is absent.
// The last, because that is what a JMAP server reports for header:Name
// (RFC 8621 §4.1.3): both bindings read a repeated Tandem-Channel or
// Tandem-Version alike (docs/decisions/tandem-hub-one-reading.md).
func (h Header) Get(name string) string {
	if v := h[strings.ToLower(name)]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// ParseHeader parses a header block (up to the first empty line, which may
// be absent). Lines may end in CRLF or a bare LF. White space between a
// field name and its colon is allowed (the obsolete syntax of RFC 5322
// §4.5.3, which servers accept). A line that is neither a field nor a
// continuation is an error wrapping [ErrNotEnvelope].
func ParseHeader(block []byte) (Header, error) {
	h := make(Header, 8)
	var name string
	var val []byte // aliases block until a continuation line is appended
	folded := false
	flush := func() {
		if name != "" {
			h[name] = append(h[name], string(bytes.Trim(val, " \t")))
		}
		name, val, folded = "", nil, false
	}
	for len(block) > 0 {
		line := block
		if i := bytes.IndexByte(block, '\n'); i >= 0 {
			line, block = block[:i], block[i+1:]
		} else {
			block = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if name == "" {
				return nil, fmt.Errorf("%w: header continuation before any field", ErrNotEnvelope)
			}
			if !folded {
				val, folded = append([]byte(nil), val...), true
			}
			val = append(val, line...) // unfolding keeps the white space
			continue
		}
		flush()
		i := bytes.IndexByte(line, ':')
		field := bytes.TrimRight(line[:max(i, 0)], " \t")
		if i <= 0 || len(field) == 0 || bytes.ContainsAny(field, " \t") {
			return nil, fmt.Errorf("%w: malformed header line %q", ErrNotEnvelope, truncate(line))
		}
		name = lowerName(field)
		val = line[i+1:]
	}
	flush()
	return h, nil
}

// lowerName returns a header name in lower case, without allocating for
// the names this package reads.
func lowerName(b []byte) string {
	for _, known := range [...]string{"tandem-channel", "tandem-version", "content-type", "content-transfer-encoding"} {
		if len(b) == len(known) && strings.EqualFold(string(b), known) {
			return known
		}
	}
	return strings.ToLower(string(b))
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// SplitMessage splits a raw message at the first empty line into its header
// block and its body.
func SplitMessage(raw []byte) (header, body []byte) {
	for i := 0; i < len(raw); {
		j := bytes.IndexByte(raw[i:], '\n')
		if j < 0 {
			return raw, nil
		}
		line := raw[i : i+j]
		if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
			return raw[:i], raw[i+j+1:]
		}
		i += j + 1
	}
	return raw, nil
}

// CheckVersion checks the Tandem-Version header (§15); of several, the
// last counts (see [Header.Get]).
func CheckVersion(h Header) error {
	if _, ok := h[strings.ToLower(HeaderVersion)]; !ok {
		return fmt.Errorf("%w: no %s header", ErrUnknownVersion, HeaderVersion)
	}
	if v := h.Get(HeaderVersion); v != Version {
		return fmt.Errorf("%w: %s %q", ErrUnknownVersion, HeaderVersion, v)
	}
	return nil
}

// CheckBodyHeader applies the rules both bindings share to the header
// fields that say how the body is stored (§10.4,
// docs/decisions/tandem-hub-one-reading.md): at most one Content-Type and
// one Content-Transfer-Encoding; a Content-Type, when present, of
// text/plain (a multipart or message body, or any other type, is not an
// envelope: a JMAP server would pick a part of it, an IMAP reader sees the
// whole) with a charset this package decodes. Failures wrap
// [ErrNotEnvelope].
func CheckBodyHeader(h Header) error {
	for _, name := range []string{"content-type", "content-transfer-encoding"} {
		if len(h[name]) > 1 {
			return fmt.Errorf("%w: %d %s fields", ErrNotEnvelope, len(h[name]), name)
		}
	}
	return checkContentType(h.Get("Content-Type"))
}

// checkContentType checks one Content-Type value as [CheckBodyHeader] does;
// "" (absent) means text/plain; charset=us-ascii (RFC 2045 §5.2).
func checkContentType(ct string) error {
	if ct == "" || ct == builtContentType {
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Errorf("%w: Content-Type %q: %v", ErrNotEnvelope, truncate([]byte(ct)), err)
	}
	if mt != "text/plain" {
		return fmt.Errorf("%w: Content-Type %s", ErrNotEnvelope, mt)
	}
	if cs := params["charset"]; cs != "" && !knownCharset(cs) {
		return fmt.Errorf("%w: unknown charset %q", ErrNotEnvelope, cs)
	}
	return nil
}

// knownCharset reports whether the §10.4 reader decodes charset: the
// names it handles itself and every IANA charset golang.org/x/text knows.
func knownCharset(charset string) bool {
	switch strings.ToLower(charset) {
	case "us-ascii", "utf-8", "utf8", "ascii":
		return true
	}
	enc, err := ianaindex.MIME.Encoding(charset)
	return err == nil && enc != nil
}

// ParseMessage reads a whole raw message as an IMAP reader does (§10.4):
// the Tandem-Version and Tandem-Channel headers, then the body's transfer
// encoding, charset and base64.
func ParseMessage(raw []byte) (Message, error) {
	if len(raw) >= MaxMessage*4 {
		return Message{}, fmt.Errorf("%w: %d-byte message", ErrTooLarge, len(raw))
	}
	hb, body := SplitMessage(raw)
	h, err := ParseHeader(hb)
	if err != nil {
		return Message{}, err
	}
	if err := CheckVersion(h); err != nil {
		return Message{}, err
	}
	ch := h.Get(HeaderChannel)
	if ch == "" {
		return Message{}, fmt.Errorf("%w: no %s header", ErrNotEnvelope, HeaderChannel)
	}
	if err := CheckBodyHeader(h); err != nil {
		return Message{}, err
	}
	env, err := DecodeBody(h.Get("Content-Type"), h.Get("Content-Transfer-Encoding"), body)
	if err != nil {
		return Message{}, err
	}
	return Message{Channel: ch, Envelope: env}, nil
}

// DecodeBody turns a body as stored into the envelope, in the three steps of
// §10.4: undo the transfer encoding (7bit, 8bit, binary, quoted-printable,
// base64), decode the charset of contentType (us-ascii when absent; UTF-16
// and every other IANA charset golang.org/x/text knows), then remove all
// white space and base64-decode. Every failure wraps [ErrNotEnvelope].
func DecodeBody(contentType, transferEncoding string, body []byte) ([]byte, error) {
	raw, err := undoTransferEncoding(transferEncoding, body)
	if err != nil {
		return nil, err
	}
	text, err := decodeCharset(contentType, raw)
	if err != nil {
		return nil, err
	}
	return decodeText(text)
}

// DecodeText is step 3 of §10.4 on text already decoded (a JMAP body value):
// remove all white space, base64-decode, and check the envelope.
func DecodeText(text string) ([]byte, error) { return decodeText([]byte(text)) }

// maxBodyText bounds a body as stored or as decoded text: a longer one is
// [ErrTooLarge] without decoding (a message under 1 MiB stays under it in
// any charset and transfer encoding).
const maxBodyText = 4 * MaxMessage

// envelopeFits reports whether an n-byte envelope makes a message under
// [MaxMessage] (§10.6) as [Build] writes it. Readers of both bindings
// apply it to the decoded envelope, so that one limit holds whatever
// encoding a server stored.
func envelopeFits(n int) bool { return headerSizeBound+BodySize(n) < MaxMessage }

func decodeText(text []byte) ([]byte, error) {
	if len(text) > maxBodyText {
		return nil, fmt.Errorf("%w: %d-byte body", ErrTooLarge, len(text))
	}
	// The base64 decoder skips CR and LF itself, which is all the white
	// space a body normally has; only if that fails is other white space
	// (every Unicode space: U+00A0 from an ISO-8859-1 body too) removed.
	env := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Decode(env, text)
	if err != nil {
		if n, err = base64.StdEncoding.Decode(env, removeSpace(text)); err != nil {
			return nil, fmt.Errorf("%w: body is not base64: %v", ErrNotEnvelope, err)
		}
	}
	env = env[:n]
	if !envelopeFits(len(env)) {
		return nil, fmt.Errorf("%w: %d-byte envelope (§10.6)", ErrTooLarge, len(env))
	}
	if err := checkEnvelope(env); err != nil {
		return nil, err
	}
	return env, nil
}

// removeSpace returns UTF-8 text without its white space (unicode.IsSpace).
func removeSpace(text []byte) []byte {
	clean := make([]byte, 0, len(text))
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		if !unicode.IsSpace(r) {
			clean = append(clean, text[i:i+size]...)
		}
		i += size
	}
	return clean
}

func undoTransferEncoding(cte string, body []byte) ([]byte, error) {
	switch strings.ToLower(strings.Trim(cte, " \t")) {
	case "", "7bit", "8bit", "binary":
		return body, nil
	case "quoted-printable":
		out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body)))
		if err != nil {
			return nil, fmt.Errorf("%w: quoted-printable: %v", ErrNotEnvelope, err)
		}
		return out, nil
	case "base64":
		out, err := decodeBase64Lenient(body)
		if err != nil {
			return nil, fmt.Errorf("%w: base64 transfer encoding: %v", ErrNotEnvelope, err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w: unknown transfer encoding %q", ErrNotEnvelope, cte)
	}
}

// decodeBase64Lenient decodes standard base64 with any white space between
// characters, as a base64 transfer encoding is stored (RFC 2045 §6.8).
func decodeBase64Lenient(b []byte) ([]byte, error) {
	clean := bytes.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\r', '\n':
			return -1
		}
		return r
	}, b)
	out := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
	n, err := base64.StdEncoding.Decode(out, clean)
	return out[:n], err
}

// builtContentType is the Content-Type Build writes.
const builtContentType = "text/plain; charset=us-ascii"

// decodeCharset returns b as UTF-8 text. ASCII and UTF-8 bodies are
// returned as they are, after a validity check.
func decodeCharset(contentType string, b []byte) ([]byte, error) {
	charset := "us-ascii"
	if contentType != "" && contentType != builtContentType {
		if err := checkContentType(contentType); err != nil {
			return nil, err
		}
		_, params, _ := mime.ParseMediaType(contentType)
		if c := params["charset"]; c != "" {
			charset = c
		}
	}
	switch strings.ToLower(charset) {
	case "us-ascii", "utf-8", "utf8", "ascii":
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("%w: body is not valid %s", ErrNotEnvelope, charset)
		}
		return b, nil
	}
	enc, err := ianaindex.MIME.Encoding(charset)
	if err != nil || enc == nil {
		return nil, fmt.Errorf("%w: unknown charset %q", ErrNotEnvelope, charset)
	}
	out, err := enc.NewDecoder().Bytes(b)
	if err != nil {
		return nil, fmt.Errorf("%w: charset %s: %v", ErrNotEnvelope, charset, err)
	}
	return out, nil
}
