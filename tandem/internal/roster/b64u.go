package roster

import (
	"encoding/base64"
	"fmt"

	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// b64u is RFC 4648 §5 base64url without padding (tandem-gaps.md, §5.2).
var b64u = base64.RawURLEncoding

// decodeB64u decodes a b64u string with the strict reader's decoder
// (tjson.DecodeB64U: no padding, no standard alphabet, zero trailing bits),
// after rejecting every byte outside the URL alphabet: encoding/base64
// silently skips CR and LF, which another reader may not, and one string
// must be read as the same bytes, or rejected, everywhere (§10.5).
func decodeB64u(s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return nil, fmt.Errorf("byte %d (%q) not in the base64url alphabet", i, c)
		}
	}
	return tjson.DecodeB64U(s)
}

// decodeFixed decodes a b64u string that must hold exactly n bytes.
func decodeFixed(s string, n int, what string) ([]byte, error) {
	b, err := decodeB64u(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(b) != n {
		return nil, fmt.Errorf("%s: %d bytes, want %d", what, len(b), n)
	}
	return b, nil
}

func encB64u(b []byte) string { return b64u.EncodeToString(b) }
