package suite

import (
	"crypto/subtle"
	"fmt"
	"strings"
)

// BackupKeyLen is the length of a backup key without separators:
// b32 of 35 bytes (§6.3).
const BackupKeyLen = 56

// BackupKey encodes the user secret US for humans without separators
// (§6.3, tandem-gaps.md):
//
//	b32(US || H(US)[0..3])   56 characters a-z2-7
func BackupKey(us [32]byte) string {
	h := H(us[:])
	b := make([]byte, 0, 35)
	b = append(append(b, us[:]...), h[:3]...)
	return B32(b)
}

// FormatBackupKey is BackupKey shown as 14 groups of 4 characters separated
// by single spaces (§6.3).
func FormatBackupKey(us [32]byte) string {
	k := BackupKey(us)
	var sb strings.Builder
	for i := 0; i < len(k); i += 4 {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(k[i : i+4])
	}
	return sb.String()
}

// ParseBackupKey reads a backup key as a person typed it: spaces and dashes
// are ignored and upper case is accepted (tandem-gaps.md). Any other
// character, a length other than 56 characters, or check bytes that do not
// match H(US)[0..3] is an error wrapping ErrBackupKey.
func ParseBackupKey(s string) ([32]byte, error) {
	var us [32]byte
	if len(s) > 4*BackupKeyLen {
		return us, fmt.Errorf("%w: too long", ErrBackupKey)
	}
	clean := make([]byte, 0, BackupKeyLen)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '-':
			continue
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z' || c >= '2' && c <= '7':
		default:
			return us, fmt.Errorf("%w: character %q at offset %d is not a backup-key letter", ErrBackupKey, c, i)
		}
		clean = append(clean, c)
	}
	if len(clean) != BackupKeyLen {
		return us, fmt.Errorf("%w: %d characters, want %d", ErrBackupKey, len(clean), BackupKeyLen)
	}
	raw, err := b32.DecodeString(string(clean))
	if err != nil || len(raw) != 35 {
		return us, fmt.Errorf("%w: not base32", ErrBackupKey)
	}
	us = [32]byte(raw[:32])
	h := H(us[:])
	if subtle.ConstantTimeCompare(h[:3], raw[32:]) != 1 {
		return [32]byte{}, fmt.Errorf("%w: check characters do not match (a typo?)", ErrBackupKey)
	}
	return us, nil
}
